package install

import (
	"context"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
)

// A running host that watches the tools folder serves a new install, an upgrade (swapped
// in with one rename exchange) and a removal, with no reload asked for.
func TestWatchingHostPicksUpInstalls(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = e.host.Watch(ctx, host.WatchOptions{Rescan: -1})
	}()
	defer func() {
		cancel()
		<-done
	}()
	time.Sleep(100 * time.Millisecond) // let the watcher add its watches

	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("the watching host did not see %s; tools: %+v", what, e.host.Tools())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	version := func() string {
		en, ok := e.host.Tool("greet")
		if !ok || en.Status != host.StatusOK {
			return ""
		}
		return en.Version
	}
	e.mustInstall(e.folder("v1", greetTool("1.0.0")), InstallOptions{})
	waitFor("the new tool", func() bool { return version() == "1.0.0" })
	e.mustInstall(e.folder("v2", greetTool("2.0.0")), InstallOptions{})
	waitFor("the upgrade", func() bool { return version() == "2.0.0" })
	if err := e.in.Remove(context.Background(), "greet", false); err != nil {
		t.Fatal(err)
	}
	waitFor("the removal", func() bool { _, ok := e.host.Tool("greet"); return !ok })
}

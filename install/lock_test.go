package install

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestLockNameSerializes(t *testing.T) {
	cache := t.TempDir()
	ctx := context.Background()
	unlock, err := lockName(ctx, cache, "greet", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Another tool is not held up.
	other, err := lockName(ctx, cache, "other", nil)
	if err != nil {
		t.Fatal(err)
	}
	other()

	var waited atomic.Bool
	got := make(chan error, 1)
	go func() {
		u, err := lockName(ctx, cache, "greet", func() { waited.Store(true) })
		if err == nil {
			u()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("second lock taken while the first is held: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	unlock()
	if err := <-got; err != nil || !waited.Load() {
		t.Fatalf("second lock: %v (waited %v)", err, waited.Load())
	}

	// A caller that gives up while waiting gets an error saying so.
	unlock, _ = lockName(ctx, cache, "greet", nil)
	defer unlock()
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := lockName(cctx, cache, "greet", nil); err == nil || !strings.Contains(err.Error(), "waiting for another install of greet") {
		t.Fatalf("cancelled wait: %v", err)
	}
}

// An install stopped in the middle (Ctrl-C) leaves no scratch space and the old version.
func TestCancelledInstallLeavesNothing(t *testing.T) {
	srv := newServer(t)
	e := newEnv(t, envOptions{})
	e.mustInstall(e.folder("greet", greetTool("1.0.0")), InstallOptions{})
	started := make(chan struct{})
	srv.handle("/slow.tar.gz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100000")
		_, _ = w.Write([]byte{0x1f, 0x8b})
		w.(http.Flusher).Flush()
		close(started)
		<-r.Context().Done()
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	_, err := e.in.Install(ctx, srv.URL+"/slow.tar.gz", InstallOptions{Name: "greet"})
	ie := installError(t, err)
	if ie.Stage != StageDownload || !errors.Is(err, context.Canceled) || ie.Kept != "1.0.0" {
		t.Fatalf("%v", err)
	}
	entries, _ := os.ReadDir(e.layout.Tools)
	if len(entries) != 1 || entries[0].Name() != "greet" {
		t.Fatalf("tools folder holds %v", entries)
	}
	if v := e.servingVersion("greet"); v != "1.0.0" {
		t.Fatalf("serving %s", v)
	}
}

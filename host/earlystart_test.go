package host_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/sandbox"
)

// earlyDebounce is long enough that no reload can have started a worker before it ends.
const earlyDebounce = 4 * time.Second

// watchingDebounced starts the host's watcher with a long debounce for the test.
func (f *fixture) watchingDebounced(debounce time.Duration) {
	f.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = f.h.Watch(ctx, host.WatchOptions{Debounce: debounce, Rescan: -1})
	}()
	f.t.Cleanup(func() { cancel(); <-done })
	time.Sleep(50 * time.Millisecond) // let the watcher add its watches
}

// startedTool is importWriterTool whose description also says when the process that
// imported it (the one that learned its definition) started.
func startedTool(name, marker string) string {
	return strings.Replace(importWriterTool(name, marker, ""), "description: 'writes at import'", "description: 'started ' + performance.timeOrigin", 1)
}

// When a tool folder appears, the worker that learns its definition and the worker of the
// scope served last start at once, during the watcher's debounce and the bundle, not after
// them; and still the tool's top-level code runs with the workspace only at its first call.
// With a debounce of 4 s, a worker that started less than 4 s after the folder was made was
// not started by the reload (which runs once the folder has been quiet for 4 s).
func TestNewFolderWorkersStartDuringDebounce(t *testing.T) {
	sf := newSandboxFixture(t, sandbox.ModeLandlock, "")
	if out := sf.call("canary", `{}`); !out.Result.Success {
		t.Fatalf("canary: %s", out.Result.Error)
	}
	sf.watchingDebounced(earlyDebounce)
	marker := filepath.Join(sf.ws, "imported.txt")
	made := time.Now()
	sf.addTool("fresh", map[string]string{"package.json": pkgJSON, "tool.js": startedTool("fresh", marker)})
	reloadFrom := made.Add(earlyDebounce)
	var e host.Entry
	sf.eventually("fresh to be listed", func() bool {
		for _, x := range sf.h.Tools() {
			if x.Name == "fresh" && x.Status == host.StatusOK {
				e = x
				return true
			}
		}
		return false
	})
	ms, err := strconv.ParseFloat(strings.TrimPrefix(e.Definition.Description, "started "), 64)
	if err != nil {
		t.Fatalf("description %q: %v", e.Definition.Description, err)
	}
	if probe := time.UnixMicro(int64(ms * 1000)); !probe.Before(reloadFrom) {
		t.Fatalf("the worker that learned the definition started %v after the folder was made: not before the reload", probe.Sub(made))
	}
	if data, err := os.ReadFile(marker); err == nil {
		t.Fatalf("the tool's top-level code wrote in the workspace before its first call: %q", data)
	}
	before := time.Now()
	if started := firstCallStarted(t, sf, "fresh"); !before.Add(started).Before(reloadFrom) {
		t.Fatalf("the first call's worker started %v after the folder was made: not before the reload", before.Add(started).Sub(made))
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the first call's worker did not load the tool with the workspace: %v", err)
	}
	sf.unaffected(t)
}

// A folder whose worker would start otherwise than the one started when it appeared (here
// its package.json, written after the folder was made, caps its memory) gets workers of its
// own: the ones started early are stopped unused.
func TestNewFolderEarlyWorkersNotUsedWhenTheyDiffer(t *testing.T) {
	sf := newSandboxFixture(t, sandbox.ModeLandlock, "")
	if out := sf.call("canary", `{}`); !out.Result.Success {
		t.Fatalf("canary: %s", out.Result.Error)
	}
	sf.watchingDebounced(earlyDebounce)
	dir := filepath.Join(sf.layout.Tools, "capped")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the watcher sees the folder empty and starts its workers
	made := time.Now()
	sf.addTool("capped", map[string]string{
		"package.json": `{"name":"capped","type":"module","jean2":{"memoryMB":200}}`,
		"tool.js":      startedTool("capped", filepath.Join(sf.ws, "imported.txt")),
	})
	var e host.Entry
	sf.eventually("capped to be listed", func() bool {
		for _, x := range sf.h.Tools() {
			if x.Name == "capped" && x.Status == host.StatusOK {
				e = x
				return true
			}
		}
		return false
	})
	ms, err := strconv.ParseFloat(strings.TrimPrefix(e.Definition.Description, "started "), 64)
	if err != nil {
		t.Fatalf("description %q: %v", e.Definition.Description, err)
	}
	if probe := time.UnixMicro(int64(ms * 1000)); probe.Before(made.Add(earlyDebounce)) {
		t.Fatalf("the worker that learned the definition started %v after the folder's files were written, before the reload: the one started early was used", probe.Sub(made))
	}
	sf.unaffected(t)
}

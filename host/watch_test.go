package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
)

func versionedTool(name string, version int, extra string) string {
	return fmt.Sprintf(`export const definition = { name: %q, description: 'versioned', inputSchema: { type: 'object', properties: { wait: { type: 'number' } } } };
export async function execute(input) {
  %s
  if (input.wait) await new Promise((r) => setTimeout(r, input.wait));
  return { success: true, result: %d };
}
`, name, extra, version)
}

// watching starts the host's watcher for the test.
func (f *fixture) watching() {
	f.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = f.h.Watch(ctx, host.WatchOptions{Debounce: 20 * time.Millisecond, Rescan: -1})
	}()
	f.t.Cleanup(func() { cancel(); <-done })
	time.Sleep(50 * time.Millisecond) // let the watcher add its watches
}

// eventually polls cond until it holds or 20s pass.
func (f *fixture) eventually(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			f.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (f *fixture) answer(name string, args string) (int, string) {
	out := f.call(name, args)
	if !out.Result.Success {
		return -1, out.Result.Error
	}
	var n int
	_ = json.Unmarshal(out.Result.Result, &n)
	return n, ""
}

// A client calling continuously while the tool is rewritten 50 times: no call fails, and
// every answer comes from exactly one version, never going back.
func TestReloadUnderLoad(t *testing.T) {
	f := newFixture(t)
	dir := f.addTool("live", map[string]string{"tool.js": versionedTool("live", 0, "")})
	f.start()
	f.watching()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	type record struct {
		v   int
		err string
	}
	results := make([][]record, 4)
	// Each client's latest answer, for the rewrites that wait for every client to see them.
	latest := make([]atomic.Int64, len(results))
	for c := range results {
		latest[c].Store(-1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				v, err := f.answer("live", `{}`)
				results[c] = append(results[c], record{v, err})
				latest[c].Store(int64(v))
			}
		}()
	}
	stopClients := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(stopClients)
	for v := 1; v <= 50; v++ {
		// Written in place, as many editors do: a reload may see a half-written file, which
		// must keep the last good version serving.
		if err := os.WriteFile(filepath.Join(dir, "tool.js"), []byte(versionedTool("live", v, "")), 0o644); err != nil {
			t.Fatal(err)
		}
		if v%5 != 0 {
			// Rewrites closer together than a reload takes: they coalesce.
			time.Sleep(120 * time.Millisecond)
			continue
		}
		// Every fifth version is waited for until each client has been answered by it: a
		// reload takes seconds on a loaded machine, and 120 ms apart all 50 rewrites once
		// coalesced into 6 versions (the test wanted 10).
		f.eventually(fmt.Sprintf("every client answered by version %d", v), func() bool {
			for c := range latest {
				if latest[c].Load() != int64(v) {
					return false
				}
			}
			return true
		})
	}
	stopClients()

	total, versions := 0, map[int]bool{}
	for c, rs := range results {
		last := -1
		for _, r := range rs {
			total++
			if r.err != "" {
				t.Fatalf("client %d: a call failed during reloads: %s", c, r.err)
			}
			if r.v < last {
				t.Fatalf("client %d: answer from version %d after version %d", c, r.v, last)
			}
			if r.v < 0 || r.v > 50 {
				t.Fatalf("client %d: answer %d is from no version", c, r.v)
			}
			last = r.v
			versions[r.v] = true
		}
	}
	t.Logf("%d calls answered by %d distinct versions during 50 rewrites", total, len(versions))
	// Writes closer together than a reload takes coalesce, so not every version answers; the
	// ten waited for must.
	if len(versions) < 10 {
		t.Fatalf("only %d of 51 versions answered", len(versions))
	}
}

// A call in flight finishes on the version it started on; new calls go to the new one; a
// broken edit keeps the last good version serving, with the error beside it.
func TestReloadVersionsAndBrokenEdits(t *testing.T) {
	f := newFixture(t)
	dir := f.addTool("ver", map[string]string{"tool.js": versionedTool("ver", 1, ""), "VERSION": "1.1.0"})
	f.start()
	events := make(chan host.ToolsChanged, 16)
	cancel := f.h.Subscribe(events)
	defer cancel()
	f.watching()

	slow := make(chan int)
	go func() { v, _ := f.answer("ver", `{"wait":1500}`); slow <- v }()
	time.Sleep(300 * time.Millisecond)
	_ = os.WriteFile(filepath.Join(dir, "tool.js"), []byte(versionedTool("ver", 2, "")), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "VERSION"), []byte("1.2.0"), 0o644)
	f.eventually("version 2", func() bool { v, _ := f.answer("ver", `{}`); return v == 2 })
	if v := <-slow; v != 1 {
		t.Fatalf("the call in flight was answered by version %d, not the one it started on", v)
	}
	select {
	case ev := <-events:
		if len(ev.Changed) != 1 || ev.Changed[0] != "ver" {
			t.Fatalf("event %+v", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no tools-changed event")
	}

	_ = os.WriteFile(filepath.Join(dir, "tool.js"), []byte("export const definition = {;\n"), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "VERSION"), []byte("1.3.0"), 0o644)
	// Each write is an event: under load a reload may run between them and report a
	// VERSION caught half written, which the next event's reload replaces.
	f.eventually("the broken edit to be reported", func() bool { return strings.HasPrefix(f.entry("ver").Error, "1.3.0 failed to load: ") })
	e := f.entry("ver")
	if e.Status != host.StatusOK || !strings.HasPrefix(e.Error, "1.3.0 failed to load: ") || !strings.HasSuffix(e.Error, "; still serving 1.2.0") || !strings.Contains(e.Error, "tool.js:1:28") {
		t.Fatalf("entry after a broken edit: %+v", e)
	}
	if v, err := f.answer("ver", `{}`); v != 2 {
		t.Fatalf("the last good version is not serving: %d %s", v, err)
	}
	_ = os.WriteFile(filepath.Join(dir, "tool.js"), []byte(versionedTool("ver", 3, "")), 0o644)
	f.eventually("the fixed version", func() bool { v, _ := f.answer("ver", `{}`); return v == 3 })
	if e := f.entry("ver"); e.Error != "" || e.Version != "1.3.0" {
		t.Fatalf("entry after the fix: %+v", e)
	}
}

// New and deleted folders and a changed .env take effect without a restart.
func TestReloadFoldersAndEnv(t *testing.T) {
	f := newFixture(t)
	f.start()
	events := make(chan host.ToolsChanged, 16)
	defer f.h.Subscribe(events)()
	f.watching()

	// Folders appear whole (as an install's rename does) and piecemeal (as a person types).
	staging := filepath.Join(t.TempDir(), "stage")
	_ = os.MkdirAll(staging, 0o755)
	_ = os.WriteFile(filepath.Join(staging, "tool.js"), []byte(versionedTool("renamed-in", 7, "")), 0o644)
	if err := os.Rename(staging, filepath.Join(f.layout.Tools, "renamed-in")); err != nil {
		t.Fatal(err)
	}
	f.addTool("typed-in", map[string]string{"tool.js": versionedTool("typed-in", 8, "")})
	f.eventually("new tools", func() bool {
		a, _ := f.answer("renamed-in", `{}`)
		b, _ := f.answer("typed-in", `{}`)
		return a == 7 && b == 8
	})

	// Env: a tool that reports a declared variable sees a .env change.
	f.addTool("envy", map[string]string{"tool.js": `export const definition = { name: 'envy', description: 'env', env: ['ENVY'], inputSchema: { type: 'object' } };
export async function execute(_, ctx) { return { success: true, result: Number(ctx.env.get('ENVY') ?? 0) }; }
`})
	f.eventually("envy", func() bool { v, err := f.answer("envy", `{}`); return v == 0 && err == "" })
	drain(events)
	_ = os.WriteFile(f.layout.DotEnv, []byte("ENVY=5\n"), 0o600)
	f.eventually("the .env value", func() bool { v, _ := f.answer("envy", `{}`); return v == 5 })
	waitEvent(t, events, func(ev host.ToolsChanged) bool { return len(ev.Changed) == 1 && ev.Changed[0] == "envy" })
	if e := f.entry("envy"); len(e.Env) != 1 || !e.Env[0].Set {
		t.Fatalf("env status %+v", e.Env)
	}

	_ = os.RemoveAll(filepath.Join(f.layout.Tools, "typed-in"))
	f.eventually("the deleted tool to go", func() bool {
		_, err := f.answer("typed-in", `{}`)
		return strings.Contains(err, "unknown tool")
	})
	waitEvent(t, events, func(ev host.ToolsChanged) bool { return len(ev.Removed) == 1 && ev.Removed[0] == "typed-in" })
}

func drain(ch chan host.ToolsChanged) {
	for len(ch) > 0 {
		<-ch
	}
}

// waitEvent waits up to 10s for an event that matches.
func waitEvent(t *testing.T, ch chan host.ToolsChanged, match func(host.ToolsChanged) bool) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-ch:
			if match(ev) {
				return
			}
		case <-timeout:
			t.Fatal("the expected tools-changed event did not come")
		}
	}
}

// A tool folder made after the host's first load but before its watcher added its watches
// sent the watcher no event: the watcher's first reload finds it (before, it waited for the
// periodic rescan, 60 s by default, here off).
func TestWatchFindsAFolderMadeBeforeItsWatches(t *testing.T) {
	f := newFixture(t)
	f.start()
	f.addTool("early", map[string]string{"tool.js": versionedTool("early", 7, "")})
	f.watching()
	f.eventually("the folder made before the watches to be loaded", func() bool {
		n, _ := f.answer("early", `{}`)
		return n == 7
	})
}

package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jean2/jean2/runtime/worker"
)

// versionedModule is a tool that says which version it is, which process runs it, and how
// many calls its module instance has seen; "sleep" keeps a call running for a while.
func versionedModule(v int) string {
	return fmt.Sprintf(`
let calls = 0;
export const definition = { name: 'versioned', description: 'Version %[1]d.', inputSchema: { type: 'object' } };
export async function execute(input) {
  calls++;
  if (input.sleep) await new Promise((r) => setTimeout(r, input.sleep));
  return { success: true, result: { v: %[1]d, pid: process.pid, calls } };
}
`, v)
}

type versionAnswer struct {
	V     int `json:"v"`
	PID   int `json:"pid"`
	Calls int `json:"calls"`
}

func writeBundle(t *testing.T, dir string, v int, src string) string {
	t.Helper()
	p := filepath.Join(dir, fmt.Sprintf("tool-v%d.mjs", v))
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func callModule(t *testing.T, m *worker.Module, id, input string) versionAnswer {
	t.Helper()
	raw, err := m.Execute(context.Background(), worker.Call{ID: id, Input: json.RawMessage(input), Timeout: 10 * time.Second}, &fakeHost{})
	if err != nil {
		t.Fatalf("call %s: %v", id, err)
	}
	var r struct {
		Success bool          `json:"success"`
		Result  versionAnswer `json:"result"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || !r.Success {
		t.Fatalf("call %s: %s %v", id, raw, err)
	}
	return r.Result
}

// A second module loads into the running worker: the new version answers from the same
// process, the old version's call in flight finishes on the old code, and once the old
// module is closed its calls are refused.
func TestModuleReusesTheWorker(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		dir := t.TempDir()
		p := newPoolFor(t, rt, dir, writeBundle(t, dir, 1, versionedModule(1)), worker.PoolOptions{Modules: true, MaxWorkers: 1})
		v1 := p.Main()
		if _, err := v1.Load(context.Background()); err != nil {
			t.Fatal(err)
		}
		first := callModule(t, v1, "a", `{}`)

		// A slow call of version 1 is in flight while version 2 arrives.
		slow := make(chan versionAnswer, 1)
		go func() { slow <- callModule(t, v1, "slow", `{"sleep":400}`) }()
		time.Sleep(50 * time.Millisecond)

		v2, err := p.AddModule(writeBundle(t, dir, 2, versionedModule(2)), dir)
		if err != nil {
			t.Fatal(err)
		}
		info, err := v2.Load(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if info.Definition.Description != "Version 2." {
			t.Fatalf("loaded %+v", info.Definition)
		}
		second := callModule(t, v2, "b", `{}`)
		if second.V != 2 || second.PID != first.PID || second.Calls != 1 {
			t.Fatalf("version 2 answered %+v; version 1 ran in %d", second, first.PID)
		}
		if s := p.Stats(); s.Started != 1 {
			t.Fatalf("a new version started a worker: %+v", s)
		}

		closed := make(chan error, 1)
		go func() { closed <- v1.Close(context.Background()) }()
		if got := <-slow; got.V != 1 || got.PID != first.PID {
			t.Fatalf("the call in flight on version 1 answered %+v", got)
		}
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
		if _, err := v1.Execute(context.Background(), worker.Call{ID: "late"}, &fakeHost{}); !errors.Is(err, worker.ErrPoolClosed) {
			t.Fatalf("a call of the closed module: %v", err)
		}
		if got := callModule(t, v2, "c", `{}`); got.V != 2 || got.PID != first.PID {
			t.Fatalf("after version 1 closed, version 2 answered %+v", got)
		}
	})
}

// A module that does not load reports where, and the worker carries on with the others.
func TestModuleLoadErrorKeepsTheWorker(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		dir := t.TempDir()
		p := newPoolFor(t, rt, dir, writeBundle(t, dir, 1, versionedModule(1)), worker.PoolOptions{Modules: true})
		before := callModule(t, p.Main(), "a", `{}`)
		bad, err := p.AddModule(writeBundle(t, dir, 2, "export const definition = {;\n"), dir)
		if err != nil {
			t.Fatal(err)
		}
		_, err = bad.Load(context.Background())
		var le *worker.LoadError
		if !errors.As(err, &le) || !strings.HasSuffix(le.File, "tool-v2.mjs") || le.Line != 1 {
			t.Fatalf("got %#v", err)
		}
		if after := callModule(t, p.Main(), "b", `{}`); after.PID != before.PID || after.V != 1 {
			t.Fatalf("after a failed load: %+v, before %+v", after, before)
		}
	})
}

// A worker that has loaded MaxModules modules makes way for a fresh one, which gets a fresh
// instance of each module it loads (module state does not carry over).
func TestModulesRecycleTheWorker(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		dir := t.TempDir()
		p := newPoolFor(t, rt, dir, writeBundle(t, dir, 1, versionedModule(1)), worker.PoolOptions{Modules: true, MaxModules: 2, MaxWorkers: 1})
		a := callModule(t, p.Main(), "a", `{}`)
		m2, _ := p.AddModule(writeBundle(t, dir, 2, versionedModule(2)), dir)
		b := callModule(t, m2, "b", `{}`)
		if b.PID != a.PID {
			t.Fatalf("the second module started a worker: %d, then %d", a.PID, b.PID)
		}
		m3, _ := p.AddModule(writeBundle(t, dir, 3, versionedModule(3)), dir)
		c := callModule(t, m3, "c", `{}`)
		if c.PID == a.PID || c.V != 3 {
			t.Fatalf("the third module ran in the worker that had loaded two: %+v", c)
		}
		// The old modules still run, loaded afresh into the new worker.
		if d := callModule(t, p.Main(), "d", `{}`); d.V != 1 || d.PID != c.PID || d.Calls != 1 {
			t.Fatalf("version 1 after recycling: %+v", d)
		}
		waitFor(t, "the recycled worker to stop", 10*time.Second, func() bool { return syscall.Kill(a.PID, 0) != nil })
	})
}

// The same bundle loaded again as another module gets a fresh instance, as a new process
// would.
func TestModuleSameBundleIsFresh(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		dir := t.TempDir()
		bundle := writeBundle(t, dir, 1, versionedModule(1))
		p := newPoolFor(t, rt, dir, bundle, worker.PoolOptions{Modules: true})
		callModule(t, p.Main(), "a", `{}`)
		callModule(t, p.Main(), "b", `{}`)
		again, _ := p.AddModule(bundle, dir)
		if got := callModule(t, again, "c", `{}`); got.Calls != 1 {
			t.Fatalf("the module loaded again kept the old instance's state: %+v", got)
		}
	})
}

// Calls of two modules run side by side on one worker.
func TestModulesConcurrentCalls(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		dir := t.TempDir()
		p := newPoolFor(t, rt, dir, writeBundle(t, dir, 1, versionedModule(1)), worker.PoolOptions{Modules: true, MaxWorkers: 1})
		m2, _ := p.AddModule(writeBundle(t, dir, 2, versionedModule(2)), dir)
		var wg sync.WaitGroup
		for i := range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				m, want := p.Main(), 1
				if i%2 == 1 {
					m, want = m2, 2
				}
				if got := callModule(t, m, fmt.Sprintf("c%d", i), `{}`); got.V != want {
					t.Errorf("call %d of version %d answered %+v", i, want, got)
				}
			}()
		}
		wg.Wait()
	})
}

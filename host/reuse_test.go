package host_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/sandbox"
)

// pidTool answers its version, its process and a declared variable.
func pidTool(version int, declared string) string {
	env := ""
	if declared != "" {
		env = fmt.Sprintf("env: [%q],", declared)
	}
	return fmt.Sprintf(`export const definition = { name: 'pids', description: 'pid', %s inputSchema: { type: 'object', properties: { wait: { type: 'number' } } } };
export async function execute(input, ctx) {
  if (input.wait) await new Promise((r) => setTimeout(r, input.wait));
  return { success: true, result: { v: %d, pid: process.pid, env: %s } };
}
`, env, version, func() string {
		if declared == "" {
			return "null"
		}
		return fmt.Sprintf("ctx.env.get(%q) ?? null", declared)
	}())
}

type pidAnswer struct {
	V   int     `json:"v"`
	PID int     `json:"pid"`
	Env *string `json:"env"`
}

func (f *fixture) pidAnswer(args string) pidAnswer {
	f.t.Helper()
	out := f.call("pids", args)
	if !out.Result.Success {
		f.t.Fatalf("pids: %s", out.Result.Error)
	}
	var a pidAnswer
	if err := json.Unmarshal(out.Result.Result, &a); err != nil {
		f.t.Fatal(err)
	}
	return a
}

// waitVersion rewrites the tool and waits until version v answers.
func (f *fixture) rewriteAndWait(dir string, v int, src string) pidAnswer {
	f.t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "tool.js"), []byte(src), 0o644); err != nil {
		f.t.Fatal(err)
	}
	var a pidAnswer
	f.eventually(fmt.Sprintf("version %d", v), func() bool { a = f.pidAnswer(`{}`); return a.V == v })
	return a
}

// A saved change loads into the running worker: the new code answers from the same
// process, and a call in flight on the old version finishes on the old code.
func TestReloadReusesTheWorker(t *testing.T) {
	f := newFixture(t)
	dir := f.addTool("pids", map[string]string{"tool.js": pidTool(1, "")})
	f.start()
	f.watching()
	first := f.pidAnswer(`{}`)

	slow := make(chan pidAnswer, 1)
	go func() { slow <- f.pidAnswer(`{"wait":1500}`) }()
	time.Sleep(200 * time.Millisecond)
	second := f.rewriteAndWait(dir, 2, pidTool(2, ""))
	if second.PID != first.PID {
		t.Fatalf("version 2 runs in worker %d, version 1 ran in %d: the worker was not reused", second.PID, first.PID)
	}
	if got := <-slow; got.V != 1 || got.PID != first.PID {
		t.Fatalf("the call in flight on version 1 was answered by %+v", got)
	}
	// And again, after version 1 has drained.
	if third := f.rewriteAndWait(dir, 3, pidTool(3, "")); third.PID != first.PID {
		t.Fatalf("version 3 runs in worker %d, not %d", third.PID, first.PID)
	}
}

// A version whose declared variables have values gets workers of its own, started with
// them; so does every version after a changed .env gives a variable a value.
func TestReloadWithVariablesStartsFreshWorkers(t *testing.T) {
	f := newFixture(t)
	if err := os.WriteFile(f.layout.DotEnv, []byte("REUSE_KEY=k1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := f.addTool("pids", map[string]string{"tool.js": pidTool(1, "")})
	f.start()
	f.watching()
	first := f.pidAnswer(`{}`)

	// The new version declares a variable that has a value: fresh worker, which sees it.
	second := f.rewriteAndWait(dir, 2, pidTool(2, "REUSE_KEY"))
	if second.PID == first.PID || second.Env == nil || *second.Env != "k1" {
		t.Fatalf("version 2 declaring REUSE_KEY: %+v (version 1 ran in %d)", second, first.PID)
	}
	// Its successor declares it too: the previous worker has the variable, so no sharing
	// (the new code would run before its declaration is known).
	third := f.rewriteAndWait(dir, 3, pidTool(3, "REUSE_KEY"))
	if third.PID == second.PID || third.Env == nil || *third.Env != "k1" {
		t.Fatalf("version 3: %+v (version 2 ran in %d)", third, second.PID)
	}
	// A changed .env makes a new version with a fresh worker too.
	if err := os.WriteFile(f.layout.DotEnv, []byte("REUSE_KEY=k2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var fourth pidAnswer
	f.eventually("the new value", func() bool { fourth = f.pidAnswer(`{}`); return fourth.Env != nil && *fourth.Env == "k2" })
	if fourth.PID == third.PID {
		t.Fatalf("the changed .env was served by the old worker %d", third.PID)
	}
	// Back to no variable: version 5 may not load into a worker that holds one.
	if fifth := f.rewriteAndWait(dir, 5, pidTool(5, "")); fifth.PID == fourth.PID {
		t.Fatalf("version 5 without variables loaded into worker %d, which has REUSE_KEY", fifth.PID)
	}
}

// landlockFixture is a fixture whose workers are confined as jean2 confines them by default
// (Landlock, the network namespace, cgroups, through the launcher).
func landlockFixture(t *testing.T) *fixture {
	if abi, err := sandbox.LandlockABI(); abi < 1 {
		t.Skipf("Landlock is not available here: %v", err)
	}
	f := newFixture(t)
	f.opts.Sandbox = host.SandboxOptions{Mode: sandbox.ModeLandlock, Launcher: os.Args[0]}
	return f
}

// A confined tool's saved change loads into the worker its previous version started for the
// call's scope, confined exactly as a new one would be: no process starts, and a call in
// flight on the old version finishes on the old code.
func TestReloadUnderLandlockReusesTheWorker(t *testing.T) {
	f := landlockFixture(t)
	dir := f.addTool("pids", map[string]string{"tool.js": pidTool(1, "")})
	f.start()
	f.watching()
	first := f.pidAnswer(`{}`)

	slow := make(chan pidAnswer, 1)
	go func() { slow <- f.pidAnswer(`{"wait":1500}`) }()
	time.Sleep(200 * time.Millisecond)
	second := f.rewriteAndWait(dir, 2, pidTool(2, ""))
	if second.PID != first.PID {
		t.Fatalf("version 2 runs in worker %d, version 1 ran in %d: the confined worker was not reused", second.PID, first.PID)
	}
	if got := <-slow; got.V != 1 || got.PID != first.PID {
		t.Fatalf("the call in flight on version 1 was answered by %+v", got)
	}
	if third := f.rewriteAndWait(dir, 3, pidTool(3, "")); third.PID != first.PID {
		t.Fatalf("version 3 runs in worker %d, not %d", third.PID, first.PID)
	}
}

// declaring adds a permission declaration to a pidTool source.
func declaring(src, perms string) string {
	return strings.Replace(src, "description: 'pid',", "description: 'pid', permissions: "+perms+",", 1)
}

// A confined version that declares permissions never shares a worker, neither with the
// version before it (whose worker was started without its approved grants) nor with the one
// after (whose code would run with grants approved for another version).
func TestReloadUnderLandlockDeclaringStartsFreshWorkers(t *testing.T) {
	f := landlockFixture(t)
	dir := f.addTool("pids", map[string]string{"tool.js": pidTool(1, "")})
	f.start()
	f.watching()
	first := f.pidAnswer(`{}`)

	readable := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tool.js"), []byte(declaring(pidTool(2, ""), fmt.Sprintf("{ read: [%q] }", readable))), 0o644); err != nil {
		t.Fatal(err)
	}
	var second pidAnswer
	f.eventually("version 2, approved", func() bool {
		if _, err := f.h.ApprovePermissions("pids"); err != nil {
			return false
		}
		out := f.call("pids", `{}`)
		return out.Result.Success && json.Unmarshal(out.Result.Result, &second) == nil && second.V == 2
	})
	if second.PID == first.PID {
		t.Fatalf("version 2, declaring permissions, runs in worker %d of version 1", first.PID)
	}
	if third := f.rewriteAndWait(dir, 3, pidTool(3, "")); third.PID == second.PID {
		t.Fatalf("version 3 runs in worker %d, started with version 2's approved grants", second.PID)
	}
}

// A saved change's code runs in a scope's workers only when a call needs it there: the
// worker that learns its definition has no workspace (a write there from the module's top
// level is refused), and the scope's worker loads it at the first call, as a new worker
// would.
func TestReloadUnderLandlockLoadsIntoTheScopeAtTheFirstCall(t *testing.T) {
	f := landlockFixture(t)
	dir := f.addTool("pids", map[string]string{"tool.js": pidTool(1, "")})
	f.start()
	f.watching()
	first := f.pidAnswer(`{}`)
	v1 := f.entry("pids").Hash
	marker := filepath.Join(f.ws, "loaded-v2")
	src := "import fs from 'node:fs';\ntry { fs.writeFileSync(" + fmt.Sprintf("%q", marker) + ", String(process.pid)); } catch {}\n" + pidTool(2, "")
	if err := os.WriteFile(filepath.Join(dir, "tool.js"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	f.eventually("version 2 listed", func() bool { e := f.entry("pids"); return e.Hash != v1 && e.Status == host.StatusOK })
	if _, err := os.Stat(marker); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("version 2's top-level code wrote into the workspace before any call (stat: %v)", err)
	}
	second := f.pidAnswer(`{}`)
	if second.V != 2 || second.PID != first.PID {
		t.Fatalf("after the reload: %+v (version 1 ran in %d)", second, first.PID)
	}
	if got, err := os.ReadFile(marker); err != nil || string(got) != fmt.Sprint(first.PID) {
		t.Fatalf("the scope's worker %d did not load version 2 at its call: marker %q, %v", first.PID, got, err)
	}
}

// After MaxModules versions a worker makes way for a fresh one, and reloads carry on.
func TestReloadRecyclesTheWorker(t *testing.T) {
	f := newFixture(t)
	dir := f.addTool("pids", map[string]string{"tool.js": pidTool(0, "")})
	f.start()
	f.watching()
	pids := map[int]bool{f.pidAnswer(`{}`).PID: true}
	for v := 1; v <= 17; v++ {
		pids[f.rewriteAndWait(dir, v, pidTool(v, "")).PID] = true
	}
	if len(pids) != 2 {
		t.Fatalf("18 versions ran in %d workers, want 2 (16 modules per worker)", len(pids))
	}
}

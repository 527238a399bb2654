package host_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/sandbox"
)

// TestSandboxAttackSessionFolderSwappedForALink: a confined worker could write its
// workspace's temporary folder, which holds a folder per session (ctx.fs.tempDir). The
// hostile tool replaced its session's folder, and another session's, with a link to "/".
// The host made each folder once and then trusted the path: a scope root resolved through
// the link, so ctx.fs of the next calls took "/" for a root and read and wrote the user's
// files outside every workspace, as the host, without an ask. Now a confined worker writes
// only inside its session's folder and cannot swap it (nor another's); and should the
// folder be swapped anyway (by an unconfined process: the test stands for it), the host
// makes sure at every call that the folder is a real folder (a link in its place is
// removed, never followed) and ctx.fs never takes a temporary folder that leads elsewhere
// for a root.
func TestSandboxAttackSessionFolderSwappedForALink(t *testing.T) {
	// No tmpfs: the test swaps the folders itself, which a mount's root would refuse.
	sf := newSandboxFixture(t, sandbox.ModeLandlock, "", func(o *host.Options) { o.Limits.SessionTempMB = -1 })
	outside := filepath.Join(t.TempDir(), "user-files")
	notes := filepath.Join(outside, "notes.txt")
	write(t, notes, "the user's private notes")
	planted := filepath.Join(outside, "planted.txt")

	// The session's first call makes its folder; the tool then swaps it (and session s2's).
	if r, out := sf.try(t, map[string]any{"op": "ctxWrite", "path": "mine-too.txt"}); !out.Result.Success || !r.OK {
		t.Fatalf("first call: %+v %s", r, out.Result.Error)
	}
	inS2 := func(c *host.Call) { c.SessionID = "s2" }
	if r, out := sf.try(t, map[string]any{"op": "ctxWrite", "path": "s2.txt"}, inS2); !out.Result.Success || !r.OK {
		t.Fatalf("first call of s2: %+v %s", r, out.Result.Error)
	}
	for _, session := range []string{"s1", "s2"} {
		r, out := sf.try(t, map[string]any{"op": "swapTemp", "path": "/", "session": session})
		denied(t, "swap the session folder of "+session, r, out, "EACCES", "EBUSY", "EPERM")
		swapForLink(t, filepath.Join(sf.layout.WorkspaceTemp("w1"), session), "/")
	}
	for _, mod := range [][]func(*host.Call){nil, {inS2}} {
		r, out := sf.try(t, map[string]any{"op": "ctxRead", "path": notes}, mod...)
		if strings.Contains(string(r.Value), "private notes") {
			t.Errorf("ctx.fs read a file outside every workspace through the swapped session folder: %+v", r)
		}
		if !out.Result.Success {
			t.Fatalf("read: %s", out.Result.Error)
		}
		sf.try(t, map[string]any{"op": "ctxWriteAbs", "path": planted}, mod...)
		if _, err := os.Stat(planted); err == nil {
			t.Errorf("ctx.fs wrote %s outside every workspace through the swapped session folder", planted)
		}
	}
	// The session keeps a temporary folder of its own, a real one.
	if r, out := sf.try(t, map[string]any{"op": "ctxWrite", "path": "after.txt"}); !out.Result.Success || !r.OK {
		t.Fatalf("a call after the attack: %+v %s", r, out.Result.Error)
	}
	sf.unaffected(t)
}

// TestSandboxAttackRunsFolderSwappedForALink: sessionless calls of a workspace (the API's
// Run form) share its temporary folder's .runs, and after each such call the host removes
// what in it is older than an hour. The hostile tool, in a sessionless call, swapped .runs
// for a link to the user's files: the host listed and removed through the link, deleting
// every file and folder there older than an hour. Now a confined worker cannot swap .runs
// (it writes only inside it); and should it be swapped anyway (the test stands for an
// unconfined process), the host lists and removes in .runs opened without following a
// link, and a link in its place is removed itself.
func TestSandboxAttackRunsFolderSwappedForALink(t *testing.T) {
	// No tmpfs: the test swaps the folder itself, which a mount's root would refuse.
	sf := newSandboxFixture(t, sandbox.ModeLandlock, "", func(o *host.Options) { o.Limits.SessionTempMB = -1 })
	user := filepath.Join(t.TempDir(), "user-files")
	old := time.Now().Add(-3 * time.Hour)
	for _, p := range []string{filepath.Join(user, "thesis.tex"), filepath.Join(user, "photos", "2019.jpg")} {
		write(t, p, "years of work")
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(filepath.Join(user, "photos"), old, old); err != nil {
		t.Fatal(err)
	}
	sessionless := func(c *host.Call) { c.SessionID = "" }
	r, out := sf.try(t, map[string]any{"op": "swapTemp", "path": user}, sessionless)
	denied(t, "swap .runs", r, out, "EACCES", "EBUSY", "EPERM")
	swapForLink(t, filepath.Join(sf.layout.WorkspaceTemp("w1"), ".runs"), user)
	// One more sessionless call (the host prunes after each).
	sf.try(t, map[string]any{"op": "pid"}, sessionless)
	for _, p := range []string{filepath.Join(user, "thesis.tex"), filepath.Join(user, "photos", "2019.jpg")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("the host removed the user's %s through the swapped .runs folder: %v", p, err)
		}
	}
	sf.unaffected(t)
}

// TestSandboxAttackNestedWorkspaceSwappedForALink: a person has two workspaces, one inside
// the other (~/code and ~/code/app). A hostile tool run in the outer one may write the
// inner one's folder, so it moves it aside and puts a link in its place, to the rest of the
// user's files (or "/"). The host resolved the inner workspace's path at every call: its
// tools' ctx.fs took the link's target for their workspace and read and wrote there. Now
// the host keeps where each workspace folder really was when it first served it and
// refuses calls while the path leads elsewhere.
func TestSandboxAttackNestedWorkspaceSwappedForALink(t *testing.T) {
	sf := newSandboxFixture(t, sandbox.ModeLandlock, "")
	inner := filepath.Join(sf.ws, "app")
	write(t, filepath.Join(inner, "main.go"), "package main")
	user := filepath.Join(t.TempDir(), "user-files")
	write(t, filepath.Join(user, "notes.txt"), "the user's private notes")
	inApp := func(c *host.Call) { c.Workspace = host.Workspace{ID: "wapp", Path: inner}; c.SessionID = "sapp" }
	if r, out := sf.try(t, map[string]any{"op": "ctxRead", "path": "main.go"}, inApp); !out.Result.Success || !r.OK {
		t.Fatalf("the inner workspace before: %+v %s", r, out.Result.Error)
	}
	// In the outer workspace, the tool swaps the inner one's folder.
	r, out := sf.try(t, map[string]any{"op": "swap", "path": inner, "to": filepath.Join(sf.ws, "app-aside"), "target": user})
	if !out.Result.Success || !r.OK {
		t.Fatalf("the swap (the attack needs it): %+v %s", r, out.Result.Error)
	}
	r, out = sf.try(t, map[string]any{"op": "ctxRead", "path": "notes.txt"}, inApp)
	if strings.Contains(string(r.Value), "private notes") {
		t.Errorf("ctx.fs in the inner workspace read the user's files through the link: %+v", r)
	}
	sf.try(t, map[string]any{"op": "ctxWrite", "path": "planted.txt"}, inApp)
	if _, err := os.Stat(filepath.Join(user, "planted.txt")); err == nil {
		t.Errorf("ctx.fs in the inner workspace wrote among the user's files through the link")
	}
	r, out = sf.try(t, map[string]any{"op": "read", "path": filepath.Join(user, "notes.txt")}, inApp)
	if strings.Contains(string(r.Value), "private notes") {
		t.Errorf("the worker of the inner workspace read the user's files through the link: %+v", r)
	}
	if out.Result.Success {
		t.Logf("the inner workspace's call ran: %+v", r)
	} else if !strings.Contains(out.Result.Error, "now leads to") {
		t.Errorf("the refusal does not say what happened: %s", out.Result.Error)
	}
	sf.unaffected(t)
}

// TestSandboxAttackWorkspaceSwappedBeforeItsFirstCall: the pin of a workspace folder is
// taken when the person adds it (the server calls PinFolder, and again for every workspace
// at its start), not at its first call: a folder a tool of an enclosing workspace replaced
// by a link in between is refused too. Before, the first call took the link's target for
// the workspace.
func TestSandboxAttackWorkspaceSwappedBeforeItsFirstCall(t *testing.T) {
	sf := newSandboxFixture(t, sandbox.ModeLandlock, "")
	inner := filepath.Join(sf.ws, "lib")
	write(t, filepath.Join(inner, "lib.go"), "package lib")
	user := filepath.Join(t.TempDir(), "user-files")
	write(t, filepath.Join(user, "notes.txt"), "the user's private notes")
	sf.h.PinFolder(inner) // the person added the workspace
	r, out := sf.try(t, map[string]any{"op": "swap", "path": inner, "to": filepath.Join(sf.ws, "lib-aside"), "target": user})
	if !out.Result.Success || !r.OK {
		t.Fatalf("the swap (the attack needs it): %+v %s", r, out.Result.Error)
	}
	inLib := func(c *host.Call) { c.Workspace = host.Workspace{ID: "wlib", Path: inner}; c.SessionID = "slib" }
	r, out = sf.try(t, map[string]any{"op": "ctxRead", "path": "notes.txt"}, inLib)
	if strings.Contains(string(r.Value), "private notes") {
		t.Errorf("the first call in the swapped workspace read the user's files: %+v", r)
	}
	if out.Result.Success || !strings.Contains(out.Result.Error, "now leads to") {
		t.Errorf("the refusal: %+v", out.Result)
	}
}

// swapForLink replaces the folder dir with a link to target, as an unconfined process may.
func swapForLink(t *testing.T, dir, target string) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, dir); err != nil {
		t.Fatal(err)
	}
}

package toolfs

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/tool"
)

// fakeHome is a user's home holding jean2's home, another tool and an SSH key, with the
// session's temporary folder inside jean2's home, as the host lays them out.
type fakeHome struct {
	home, jean2, tools, tmp string
}

func newFakeHome(t *testing.T) fakeHome {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	mustDo(t, err)
	h := fakeHome{home: filepath.Join(base, "home")}
	h.jean2 = filepath.Join(h.home, ".jean2")
	h.tools = filepath.Join(h.jean2, "tools")
	h.tmp = filepath.Join(h.jean2, "sessions", "s1", "tmp")
	writeTestFile(t, filepath.Join(h.jean2, ".env"), "OPENAI_API_KEY=sk-secret", 0o600)
	writeTestFile(t, filepath.Join(h.jean2, "jean2.db"), "db", 0o600)
	writeTestFile(t, filepath.Join(h.tools, "other", "tool.ts"), "export default {}", 0o644)
	writeTestFile(t, filepath.Join(h.home, ".ssh", "id_rsa"), "PRIVATE KEY", 0o600)
	writeTestFile(t, filepath.Join(h.home, "proj", "notes.md"), "notes", 0o644)
	mustDo(t, os.MkdirAll(h.tmp, 0o755))
	return h
}

func (h fakeHome) fs(workspace string, grants Grants) *FS {
	scope := policy.Scope{Workspace: workspace, Home: h.home, TempDir: h.tmp}
	return New(Options{
		Scope:     scope,
		Tool:      "hostile",
		CallID:    "c1",
		Grants:    grants,
		Protected: policy.ProtectedPaths(h.home, h.jean2, h.tools),
		ReadOnly:  scope.SettingsDirs(),
	})
}

func wantRefused(t *testing.T, what string, err error, sentinel error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || !e.Denied || e.Code != "EACCES" || !errors.Is(err, sentinel) {
		t.Errorf("%s: %v, want a denied EACCES (%v)", what, err, sentinel)
	}
}

// TestProtectedFromHomeWorkspace works from ~, which holds jean2's home and ~/.ssh: every
// operation on them is refused, whatever is granted, and the workspace is still listed.
func TestProtectedFromHomeWorkspace(t *testing.T) {
	h := newFakeHome(t)
	everything := GrantsFunc(func(string, bool) bool { return true })
	for _, grants := range []Grants{nil, everything} {
		f := h.fs(h.home, grants)
		before := snapshotTree(t, h.jean2)
		sshBefore := snapshotTree(t, filepath.Join(h.home, ".ssh"))
		secrets := []string{".jean2/.env", ".jean2/jean2.db", ".ssh/id_rsa", "~/.ssh/id_rsa", filepath.Join(h.jean2, ".env"), ".jean2/tools/other/tool.ts"}
		for _, p := range secrets {
			_, err := f.ReadFile(ctx, p)
			wantRefused(t, "readFile "+p, err, ErrProtected)
			_, err = f.Stat(ctx, p)
			wantRefused(t, "stat "+p, err, ErrProtected)
			_, err = f.Exists(ctx, p)
			wantRefused(t, "exists "+p, err, ErrProtected)
			wantRefused(t, "writeFile "+p, f.WriteFile(ctx, p, []byte("x")), ErrProtected)
			wantRefused(t, "appendFile "+p, f.AppendFile(ctx, p, []byte("x")), ErrProtected)
			wantRefused(t, "rm "+p, f.Remove(ctx, p, false), ErrProtected)
			wantRefused(t, "rename "+p+" out", f.Rename(ctx, p, "proj/stolen"), ErrProtected)
		}
		for _, p := range []string{".ssh", ".jean2", ".jean2/tools", ".jean2/tools/other"} {
			_, err := f.ReadDir(ctx, p)
			wantRefused(t, "readDir "+p, err, ErrProtected)
			wantRefused(t, "rm -r "+p, f.Remove(ctx, p, true), ErrProtected)
			wantRefused(t, "rename "+p, f.Rename(ctx, p, "moved"), ErrProtected)
			wantRefused(t, "mkdir "+p+"/x", f.Mkdir(ctx, p+"/x", true), ErrProtected)
		}
		// Into them, and folders that hold them.
		wantRefused(t, "rename into .ssh", f.Rename(ctx, "proj/notes.md", ".ssh/authorized_keys"), ErrProtected)
		wantRefused(t, "rename over a tool", f.Rename(ctx, "proj/notes.md", ".jean2/tools/other/tool.ts"), ErrProtected)
		wantRefused(t, "writeFile another tool's folder", f.WriteFile(ctx, ".jean2/tools/other/evil.ts", []byte("x")), ErrProtected)
		wantRefused(t, "rm -r ~", f.Remove(ctx, ".", true), ErrProtected)
		wantRefused(t, "rm -r ~ by name", f.Remove(ctx, h.home, true), ErrProtected)
		wantRefused(t, "rename ~", f.Rename(ctx, h.home, filepath.Join(h.home, "..", "home2")), ErrProtected)

		// Listing the workspace works; reading what it lists that is protected does not.
		entries, err := f.ReadDir(ctx, ".")
		if err != nil {
			t.Fatalf("readDir of the workspace: %v", err)
		}
		names := make([]string, len(entries))
		for i, e := range entries {
			names[i] = e.Name
		}
		if !slices.Contains(names, ".ssh") || !slices.Contains(names, "proj") {
			t.Errorf("readDir of the workspace = %v", names)
		}
		for _, e := range entries {
			if e.Name == "proj" {
				continue
			}
			_, err := f.ReadDir(ctx, e.Name)
			wantRefused(t, "readDir of listed "+e.Name, err, ErrProtected)
		}
		// A link planted in the workspace leads to the protected place: refused too.
		link := filepath.Join(h.home, "proj", "keys")
		_ = os.Remove(link)
		mustDo(t, os.Symlink(filepath.Join(h.home, ".ssh"), link))
		_, err = f.ReadFile(ctx, "proj/keys/id_rsa")
		wantRefused(t, "readFile through a link", err, ErrProtected)
		mustDo(t, os.Remove(link))

		// The rest of the workspace and the session's temporary folder, in jean2's home,
		// are open.
		if _, err := f.ReadFile(ctx, "proj/notes.md"); err != nil {
			t.Errorf("readFile proj/notes.md: %v", err)
		}
		out := filepath.Join(h.tmp, "out.txt")
		mustDo(t, f.WriteFile(ctx, out, []byte("result")))
		if got, err := f.ReadFile(ctx, out); err != nil || string(got) != "result" {
			t.Errorf("readFile in the temporary folder = %q, %v", got, err)
		}
		mustDo(t, f.Remove(ctx, out, false))
		diffTrees(t, before, snapshotTree(t, h.jean2))
		diffTrees(t, sshBefore, snapshotTree(t, filepath.Join(h.home, ".ssh")))
	}
}

// TestProtectedOutsideWorkspaceEvenWhenGranted: a grant for the whole home does not open
// ~/.ssh or jean2's home to a call working in ~/proj.
func TestProtectedOutsideWorkspaceEvenWhenGranted(t *testing.T) {
	h := newFakeHome(t)
	f := h.fs(filepath.Join(h.home, "proj"), GrantsFunc(func(string, bool) bool { return true }))
	_, err := f.ReadFile(ctx, "~/.ssh/id_rsa")
	wantRefused(t, "readFile ~/.ssh/id_rsa", err, ErrProtected)
	wantRefused(t, "writeFile ../.jean2/.env", f.WriteFile(ctx, "../.jean2/.env", []byte("x")), ErrProtected)
	wantRefused(t, "rm -r ~", f.Remove(ctx, "~", true), ErrProtected)
	if _, err := f.ReadFile(ctx, "notes.md"); err != nil {
		t.Errorf("readFile notes.md: %v", err)
	}
}

// TestWorkspaceSettingsReadOnly: <workspace>/.jean2 (mcp.json, whose command jean2 starts)
// is read, never changed, by any route.
func TestWorkspaceSettingsReadOnly(t *testing.T) {
	w := newWorld(t)
	writeTestFile(t, w.in(".jean2/mcp.json"), `{"mcpServers":{}}`, 0o644)
	writeTestFile(t, w.in("other/mcp.json"), `{"evil":true}`, 0o644)
	writeTestFile(t, w.in("x.txt"), "x", 0o644)
	scope := policy.Scope{Workspace: w.ws, Allowed: []string{w.base}, Home: filepath.Join(w.base, "home"), TempDir: w.tmp}
	f := New(Options{Scope: scope, Ledger: w.ledger, ReadOnly: scope.SettingsDirs()})
	before := snapshotTree(t, w.in(".jean2"))

	if got, err := f.ReadFile(ctx, ".jean2/mcp.json"); err != nil || string(got) != `{"mcpServers":{}}` {
		t.Errorf("readFile .jean2/mcp.json = %q, %v", got, err)
	}
	if _, err := f.ReadDir(ctx, ".jean2"); err != nil {
		t.Errorf("readDir .jean2: %v", err)
	}
	wantRefused(t, "writeFile mcp.json", f.WriteFile(ctx, ".jean2/mcp.json", []byte(`{"evil":true}`)), ErrReadOnly)
	wantRefused(t, "appendFile mcp.json", f.AppendFile(ctx, ".jean2/mcp.json", []byte(" ")), ErrReadOnly)
	wantRefused(t, "writeFile a new file", f.WriteFile(ctx, ".jean2/new.json", []byte("x")), ErrReadOnly)
	wantRefused(t, "mkdir in it", f.Mkdir(ctx, ".jean2/d", false), ErrReadOnly)
	wantRefused(t, "rm mcp.json", f.Remove(ctx, ".jean2/mcp.json", false), ErrReadOnly)
	wantRefused(t, "rm -r .jean2", f.Remove(ctx, ".jean2", true), ErrReadOnly)
	wantRefused(t, "rename .jean2 away", f.Rename(ctx, ".jean2", "old"), ErrReadOnly)
	wantRefused(t, "rename a folder over .jean2", f.Rename(ctx, "other", ".jean2"), ErrReadOnly)
	wantRefused(t, "rename a file over mcp.json", f.Rename(ctx, "other/mcp.json", ".jean2/mcp.json"), ErrReadOnly)
	wantRefused(t, "rename mcp.json out", f.Rename(ctx, ".jean2/mcp.json", "mcp.json"), ErrReadOnly)
	// Folders that hold it: the workspace, and its parent (an allowed path here).
	wantRefused(t, "rm -r the workspace", f.Remove(ctx, ".", true), ErrReadOnly)
	wantRefused(t, "rm -r the workspace's parent", f.Remove(ctx, w.base, true), ErrReadOnly)
	wantRefused(t, "rename the workspace", f.Rename(ctx, w.ws, filepath.Join(w.base, "ws2")), ErrReadOnly)
	diffTrees(t, before, snapshotTree(t, w.in(".jean2")))

	// Other changes in the workspace still work.
	mustDo(t, f.WriteFile(ctx, "x.txt", []byte("y")))
	mustDo(t, f.Remove(ctx, "other", true))

	// Without a .jean2 yet, it cannot be made, nor put in place through a link.
	mustDo(t, os.RemoveAll(w.in(".jean2")))
	f = New(Options{Scope: scope, ReadOnly: scope.SettingsDirs()})
	wantRefused(t, "mkdir .jean2", f.Mkdir(ctx, ".jean2", false), ErrReadOnly)
	wantRefused(t, "writeFile .jean2/mcp.json", f.WriteFile(ctx, ".jean2/mcp.json", []byte("{}")), ErrReadOnly)
	mustDo(t, os.MkdirAll(w.in("settings"), 0o755))
	mustDo(t, os.Symlink("settings", w.in(".jean2")))
	wantRefused(t, "writeFile through a .jean2 link", f.WriteFile(ctx, ".jean2/mcp.json", []byte("{}")), ErrReadOnly)
	notExist(t, w.in("settings/mcp.json"))
}

// TestProtectedRecordedAsRefused: a refusal reaches the ledger with no disk change.
func TestProtectedRecordedAsRefused(t *testing.T) {
	h := newFakeHome(t)
	ledger := tool.NewLedger()
	f := New(Options{Scope: policy.Scope{Workspace: h.home, Home: h.home}, Ledger: ledger, Protected: []string{filepath.Join(h.home, ".ssh")}})
	wantRefused(t, "writeFile", f.WriteFile(ctx, ".ssh/authorized_keys", []byte("x")), ErrProtected)
	changes := ledger.Changes()
	if len(changes) != 1 || changes[0].Disk || changes[0].OK {
		t.Fatalf("ledger = %+v, want one refused change", changes)
	}
}

// TestWriteBudget: one call writes at most MaxWriteBytes through ctx.fs, all files together.
func TestWriteBudget(t *testing.T) {
	w := newWorld(t)
	f := w.fs(func(o *Options) { o.MaxWriteBytes = 10 })
	mustDo(t, f.WriteFile(ctx, "a.txt", []byte("123456")))
	mustDo(t, f.AppendFile(ctx, "a.txt", []byte("7890")))
	err := f.WriteFile(ctx, "b.txt", []byte("x"))
	e := wantCode(t, err, "EDQUOT")
	if !e.Denied || !errors.Is(err, ErrWriteBudget) {
		t.Fatalf("past the budget: %v", err)
	}
	notExist(t, w.in("b.txt"))
	wantCode(t, f.AppendFile(ctx, "a.txt", []byte("x")), "EDQUOT")
	if got := readTestFile(t, w.in("a.txt")); got != "1234567890" {
		t.Fatalf("a.txt = %q", got)
	}
	if def := w.fs(); def.opts.MaxWriteBytes != DefaultMaxWriteBytes {
		t.Fatalf("default budget %d", def.opts.MaxWriteBytes)
	}
}

//go:build linux

package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/internal/asuser"
	"github.com/jean2/jean2/runtime/gotool"
	"github.com/jean2/jean2/sandbox"
)

// Landlock judges reads and writes of contents only. Before the view (sandbox/view_linux.go)
// a tool that declared nothing changed $JEAN2_HOME 700→755, the token and .env 600→644,
// ~/.ssh/id_rsa 600→644, set .env's mtime to 1970, and cleared the x bits of the jean2
// binary (jean2 could not start again). These tests make each change from Node, Bun and a
// Go tool and check, from the host, that nothing changed.

// viewTarget is a place a confined worker must not change in any way.
type viewTarget struct{ what, path string }

// fileState is what a worker could change of a file without writing its contents.
type fileState struct {
	mode      os.FileMode
	uid, gid  uint32
	mtime     int64
	size      int64
	xattrSize int
}

func stateOf(t *testing.T, path string) fileState {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		t.Fatalf("stat %s: %v", path, err)
	}
	n, _ := syscall.Listxattr(path, nil)
	return fileState{mode: os.FileMode(st.Mode), uid: st.Uid, gid: st.Gid, mtime: st.Mtim.Nano(), size: st.Size, xattrSize: n}
}

// viewFixture is a sandboxed host whose user's home is a folder of the test's (with an ssh
// key) and whose launcher is a copy of the test binary (so the copy is "the jean2 binary" a
// worker must not change).
type viewFixture struct {
	*sandboxFixture
	targets []viewTarget
}

func newViewFixture(t *testing.T, setup ...func(*host.Options)) *viewFixture {
	t.Helper()
	realHome := os.Getenv("HOME")
	home := t.TempDir()
	t.Setenv("HOME", home) // the host protects this home's credential folders
	key := filepath.Join(home, ".ssh", "id_rsa")
	write(t, key, "-----BEGIN OPENSSH PRIVATE KEY-----\n"+secretValue+"\n")
	launcher := filepath.Join(t.TempDir(), "jean2")
	if err := asuser.CopyExecutable(os.Args[0], launcher); err != nil {
		t.Fatal(err)
	}
	setup = append([]func(*host.Options){func(o *host.Options) {
		o.Sandbox.Launcher = launcher
		o.ServerEnv = append(o.ServerEnv, "HOME="+realHome) // the Go build cache
	}}, setup...)
	sf := newSandboxFixture(t, sandbox.ModeLandlock, "", setup...)
	if !sf.h.Sandbox().MountSeal {
		t.Skipf("the launcher cannot build a view here: %s", sf.h.Sandbox().MountSealError)
	}
	token := filepath.Join(sf.layout.Home, "token")
	write(t, token, "the-token")
	if err := os.Chmod(sf.layout.Home, 0o700); err != nil {
		t.Fatal(err)
	}
	return &viewFixture{sandboxFixture: sf, targets: []viewTarget{
		{"$JEAN2_HOME", sf.layout.Home},
		{"the token", token},
		{"$JEAN2_HOME/.env", sf.layout.DotEnv},
		{"~/.ssh", filepath.Dir(key)},
		{"~/.ssh/id_rsa", key},
		{"another tool's folder", filepath.Join(sf.layout.Tools, "canary")},
		{"another tool's file", filepath.Join(sf.layout.Tools, "canary", "tool.js")},
		{"the jean2 binary", launcher},
	}}
}

// metadataOps are the changes tried on every target: each must fail and change nothing.
func metadataOps(target string) []map[string]any {
	return []map[string]any{
		{"op": "chmod", "path": target, "mode": 0o777},
		{"op": "chown", "path": target},
		{"op": "utimes", "path": target},
		{"op": "truncate", "path": target},
		{"op": "rename", "path": target, "to": target + ".moved"},
	}
}

// checkUnchanged runs every op through try and asserts that it failed and that the target,
// seen from the host, is as it was.
func (vf *viewFixture) checkUnchanged(t *testing.T, who string, try func(map[string]any) (ok bool, detail string), extra ...map[string]any) {
	t.Helper()
	for _, tg := range vf.targets {
		before := stateOf(t, tg.path)
		for _, op := range append(metadataOps(tg.path), extra...) {
			if op["path"] == "" {
				op["path"] = tg.path
			}
			ok, detail := try(op)
			if ok {
				t.Errorf("%s: %s of %s succeeded: %s", who, op["op"], tg.what, detail)
			}
			if after := stateOf(t, tg.path); after != before {
				t.Fatalf("%s: %s of %s changed it: %+v → %+v (%s)", who, op["op"], tg.what, before, after, detail)
			}
			if _, err := os.Lstat(tg.path + ".moved"); err == nil {
				t.Fatalf("%s: %s was renamed", who, tg.what)
			}
		}
	}
}

func (vf *viewFixture) nodeTry(t *testing.T) func(map[string]any) (bool, string) {
	return func(op map[string]any) (bool, string) {
		r, out := vf.try(t, op)
		if !out.Result.Success {
			t.Fatalf("%v: the call failed: %s", op, out.Result.Error)
		}
		code := ""
		if r.Code != nil {
			code = *r.Code
		}
		return r.OK, code + " " + r.Message
	}
}

func TestViewAttackMetadataFromNode(t *testing.T) {
	vf := newViewFixture(t)
	vf.checkUnchanged(t, "node", vf.nodeTry(t))
}

func TestViewAttackMetadataFromBun(t *testing.T) {
	bun := bunPath(t)
	if err := exec.Command(bun, "--version").Run(); err != nil && os.Getuid() != 0 {
		// As nobody (TestViewAttackAsOrdinaryUser) with the checkout in a folder only root may
		// enter, such as /root: this user cannot run that Bun at all.
		t.Skipf("bun at %s does not run as uid %d: %v", bun, os.Getuid(), err)
	}
	vf := newViewFixture(t, func(o *host.Options) {
		o.BunPath = bun
		o.RuntimePreference = "bun"
	})
	if e := vf.entry("hostile"); e.Runtime != "bun" {
		t.Fatalf("runtime %s", e.Runtime)
	}
	vf.checkUnchanged(t, "bun", vf.nodeTry(t))
}

// metaTool is a Go tool that changes metadata with the system calls themselves (setxattr
// included, which Node has no call for).
const metaTool = `package main

import (
	"context"
	"fmt"
	"os"
	"syscall"

	"github.com/jean2/jean2/tool"
)

type Input struct {
	Op   string ` + "`json:\"op\"`" + `
	Path string ` + "`json:\"path\"`" + `
	To   string ` + "`json:\"to,omitempty\"`" + `
	Mode uint32 ` + "`json:\"mode,omitempty\"`" + `
}

type Output struct {
	OK    bool   ` + "`json:\"ok\"`" + `
	Error string ` + "`json:\"error,omitempty\"`" + `
}

func run(ctx context.Context, c *tool.Context, in Input) (Output, error) {
	var err error
	switch in.Op {
	case "chmod":
		err = syscall.Chmod(in.Path, in.Mode)
	case "chown":
		err = syscall.Lchown(in.Path, 12345, 12345)
	case "utimes":
		err = syscall.UtimesNano(in.Path, []syscall.Timespec{{}, {}})
	case "truncate":
		err = syscall.Truncate(in.Path, 0)
	case "rename":
		err = syscall.Rename(in.Path, in.To)
	case "setxattr":
		err = syscall.Setxattr(in.Path, "user.jean2", []byte("x"), 0)
	case "create":
		var f *os.File
		if f, err = os.OpenFile(in.Path, os.O_CREATE|os.O_WRONLY, os.FileMode(in.Mode)|os.ModeSetuid); err == nil {
			f.Close()
		}
	default:
		return Output{}, fmt.Errorf("unknown op %q", in.Op)
	}
	if err != nil {
		return Output{Error: err.Error()}, nil
	}
	return Output{OK: true}, nil
}

func main() {
	t, err := tool.NewTyped(tool.Definition{Name: "go-meta", Description: "changes metadata", Timeout: 60000}, run)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := tool.Serve(t); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
`

func TestViewAttackMetadataFromGo(t *testing.T) {
	vf := newViewFixture(t)
	files := gotool.Scaffold("go-meta")
	files["tool.go"] = metaTool
	vf.addTool("go-meta", files)
	if err := vf.h.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if e := vf.entry("go-meta"); e.Status != host.StatusOK {
		t.Skipf("the Go tool did not build here: %s", e.Error)
	}
	try := func(op map[string]any) (bool, string) {
		var r struct {
			OK    bool   `json:"ok"`
			Error string `json:"error"`
		}
		out := vf.callJSON(t, "go-meta", op, &r)
		return r.OK, r.Error + out
	}
	vf.checkUnchanged(t, "go", try, map[string]any{"op": "setxattr", "path": ""})

	// In its own workspace a worker changes modes as it likes, but never makes a set-user-ID
	// or set-group-ID file: as root, a copy of a program made set-user-ID there would be
	// root's to any local user.
	mine := filepath.Join(vf.ws, "mine.txt")
	if ok, detail := try(map[string]any{"op": "chmod", "path": mine, "mode": 0o755}); !ok {
		t.Fatalf("chmod 755 in the workspace: %s", detail)
	}
	for _, mode := range []int{0o4755, 0o2755, 0o6755} {
		if ok, _ := try(map[string]any{"op": "chmod", "path": mine, "mode": mode}); ok {
			t.Errorf("chmod %o in the workspace succeeded", mode)
		}
	}
	made := filepath.Join(vf.ws, "suid")
	if ok, _ := try(map[string]any{"op": "create", "path": made, "mode": 0o755}); ok {
		t.Errorf("creating a set-user-ID file succeeded")
	}
	for _, p := range []string{mine, made} {
		if fi, err := os.Stat(p); err == nil && fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			t.Fatalf("%s is %v", p, fi.Mode())
		}
	}
}

// callJSON calls a tool with input and decodes its result into out; it returns the call's
// error text for messages.
func (sf *sandboxFixture) callJSON(t *testing.T, name string, input map[string]any, out any) string {
	t.Helper()
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	o := sf.call(name, string(raw))
	if !o.Result.Success {
		t.Fatalf("%s %v: %s", name, input, o.Result.Error)
	}
	if err := json.Unmarshal(o.Result.Result, out); err != nil {
		t.Fatalf("decode %s: %v", o.Result.Result, err)
	}
	return strings.TrimSpace(fmt.Sprint(o.Result.Error))
}

// dataTool keeps its data where jean2's catalogue keeps it (todowrite's todos.db): in
// ~/.jean2/data, made on first use.
const dataTool = `import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const definition = {
  name: 'NAME',
  description: 'keeps a file in ~/.jean2/data',
  inputSchema: { type: 'object', properties: { op: { type: 'string' } }, required: ['op'] },
};

export async function execute(input) {
  const dir = path.join(os.homedir(), '.jean2', 'data');
  try {
    if (input.op === 'write') {
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, 'todos.db'), input.text);
    }
    return { success: true, result: { files: fs.readdirSync(dir), text: fs.existsSync(path.join(dir, 'todos.db')) ? fs.readFileSync(path.join(dir, 'todos.db'), 'utf8') : null } };
  } catch (e) {
    return { success: true, result: { error: String(e.message) } };
  }
}
`

// Each tool sees its own persistent folder at $JEAN2_HOME/data (here ~/.jean2 is
// $JEAN2_HOME), and no other tool's.
func TestViewToolDataFolder(t *testing.T) {
	vf := newViewFixture(t)
	if err := os.Symlink(vf.layout.Home, filepath.Join(os.Getenv("HOME"), ".jean2")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"todos", "other"} {
		vf.addTool(name, map[string]string{"package.json": pkgJSON, "tool.js": strings.Replace(dataTool, "NAME", name, 1)})
	}
	if err := vf.h.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	type seen struct {
		Files []string `json:"files"`
		Text  *string  `json:"text"`
		Error string   `json:"error"`
	}
	var r seen
	vf.callJSON(t, "todos", map[string]any{"op": "write", "text": "buy milk"}, &r)
	if r.Error != "" || r.Text == nil || *r.Text != "buy milk" {
		t.Fatalf("todos wrote its data: %+v", r)
	}
	data, err := os.ReadFile(filepath.Join(vf.layout.Data, "todos", "todos.db"))
	if err != nil || string(data) != "buy milk" {
		t.Fatalf("the host's copy: %q %v", data, err)
	}
	r = seen{}
	vf.callJSON(t, "other", map[string]any{"op": "read"}, &r)
	if r.Text != nil || len(r.Files) != 0 {
		t.Fatalf("another tool saw todos's data: %+v", r)
	}
	// Nor through the host's path of it.
	rr, out := vf.try(t, map[string]any{"op": "read", "path": filepath.Join(vf.layout.Data, "todos", "todos.db")})
	denied(t, "read another tool's data", rr, out, "EACCES")
	// The data stays across a reload.
	if err := vf.h.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	r = seen{}
	vf.callJSON(t, "todos", map[string]any{"op": "read"}, &r)
	if r.Text == nil || *r.Text != "buy milk" {
		t.Fatalf("todos's data after a reload: %+v", r)
	}
}

// The same attacks from an ordinary user's jean2, whose launchers build the view in a user
// namespace of their own: this test binary runs them again as nobody.
func TestViewAttackAsOrdinaryUser(t *testing.T) {
	// The Go tool's build needs module and build caches nobody may write; they are kept
	// between runs so only the first run downloads and compiles the tool package's modules.
	goCaches := filepath.Join(os.TempDir(), "jean2-as-nobody-go")
	if err := os.MkdirAll(goCaches, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(goCaches, asuser.Nobody, asuser.Nobody); err != nil {
		t.Fatal(err)
	}
	out, err := asuser.Rerun(t, "^(TestViewAttackMetadataFrom(Node|Bun|Go)|TestViewToolDataFolder)$", "JEAN2_BUN="+os.Getenv("JEAN2_BUN"),
		"GOMODCACHE="+filepath.Join(goCaches, "mod"), "GOCACHE="+filepath.Join(goCaches, "build"))
	if strings.Contains(out, "cannot build a view here") {
		t.Skipf("no view for an ordinary user here:\n%s", out)
	}
	names := []string{"TestViewAttackMetadataFromNode", "TestViewAttackMetadataFromGo", "TestViewToolDataFolder"}
	if os.Getenv("JEAN2_BUN") != "" {
		names = append(names, "TestViewAttackMetadataFromBun")
	}
	for _, name := range names {
		skipped := name == "TestViewAttackMetadataFromBun" && strings.Contains(out, "--- SKIP: "+name)
		if skipped {
			t.Logf("as nobody, %s was skipped: this user cannot run the Bun of $JEAN2_BUN", name)
		}
		if !skipped && !strings.Contains(out, "--- PASS: "+name) {
			t.Fatalf("as nobody, %s did not pass (%v):\n%s", name, err, out)
		}
	}
	if err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
	t.Logf("as nobody:\n%s", out)
}

// TestViewCatalogueTodos: a tool written as jean2's catalogue todowrite is (bun:sqlite at
// os.homedir()/.jean2/data/todos.db in WAL mode, no declaration) keeps its list across calls
// in a Bun worker under the view when ~/.jean2 is $JEAN2_HOME (the default), and the
// database is in the tool's own data folder on the host. (With $JEAN2_HOME elsewhere the
// view has no ~/.jean2/data to show: docs/security.md, "What does not hold".)
func TestViewCatalogueTodos(t *testing.T) {
	vf := newViewFixture(t, func(o *host.Options) {
		o.BunPath = bunPath(t)
		o.RuntimePreference = "bun"
	})
	if err := os.Symlink(vf.layout.Home, filepath.Join(os.Getenv("HOME"), ".jean2")); err != nil {
		t.Fatal(err)
	}
	vf.copyTool("catalogue-todos")
	if err := vf.h.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if e := vf.entry("catalogue-todos"); e.Runtime != "bun" || e.Status != host.StatusOK {
		t.Fatalf("catalogue-todos: %s %s %s", e.Runtime, e.Status, e.Error)
	}
	type list struct {
		DBPath string `json:"dbPath"`
		Items  []struct {
			Content string `json:"content"`
		} `json:"items"`
	}
	var r list
	vf.callJSON(t, "catalogue-todos", map[string]any{"todos": []map[string]string{{"content": "buy milk", "status": "pending", "priority": "high"}}}, &r)
	if r.DBPath != filepath.Join(os.Getenv("HOME"), ".jean2", "data", "todos.db") {
		t.Errorf("the tool's database path %q: not under HOME %s", r.DBPath, os.Getenv("HOME"))
	}
	r = list{}
	vf.callJSON(t, "catalogue-todos", map[string]any{}, &r)
	if len(r.Items) != 1 || r.Items[0].Content != "buy milk" {
		t.Fatalf("the list read back: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(vf.layout.Data, "catalogue-todos", "todos.db")); err != nil {
		t.Errorf("the database is not in the tool's data folder: %v", err)
	}
}

// A worker that writes to /tmp by name writes in its own temporary folder (its TMPDIR, its
// session's): in the view /tmp is that folder, read-write. Another session's worker, of
// the same workspace or another, does not see the file, nor does the machine's /tmp get it. Before, /tmp was read-only in
// the view (EROFS). The fixture lies outside /tmp (see Plan.Tmp).
func TestViewWorkerTmpIsItsTempFolder(t *testing.T) {
	base, err := os.MkdirTemp("/var/tmp", "jean2-tmpview-")
	if err != nil {
		t.Skipf("no /var/tmp to hold the fixture outside /tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	t.Setenv("TMPDIR", base)
	sf := newSandboxFixture(t, sandbox.ModeLandlock, "")
	if !sf.h.Sandbox().MountSeal {
		t.Skip("no view here")
	}
	name := "jean2-tmpview-" + strings.ReplaceAll(t.Name(), "/", "-")
	r, out := sf.try(t, map[string]any{"op": "write", "path": "/tmp/" + name})
	if !r.OK {
		t.Fatalf("write /tmp/%s: %+v %s", name, r, out.Result.Error)
	}
	if data, err := os.ReadFile(filepath.Join(sf.layout.WorkspaceTemp("w1"), "s1", name)); err != nil || string(data) != "pwned" {
		t.Fatalf("the file is not in the session's temporary folder: %q %v", data, err)
	}
	if _, err := os.Stat(filepath.Join("/tmp", name)); !os.IsNotExist(err) {
		t.Fatalf("the machine's /tmp got the file: %v", err)
	}
	r, _ = sf.try(t, map[string]any{"op": "read", "path": "/tmp/" + name}, func(c *host.Call) { c.Workspace.ID, c.SessionID = "w2", "s9" })
	if r.OK {
		t.Fatalf("a worker of workspace w2 read w1's /tmp file: %+v", r)
	}
	r, _ = sf.try(t, map[string]any{"op": "read", "path": "/tmp/" + name}, inSession("s2"))
	if r.OK {
		t.Fatalf("a worker of session s2 read s1's /tmp file: %+v", r)
	}
}

package undo

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/tool"
	"github.com/jean2/jean2/toolfs"
)

// env is one workspace, one session in a real database, and a snapshot store.
type env struct {
	t       testing.TB
	ctx     context.Context
	root    string
	dbPath  string
	db      *store.DB
	dir     string // the snapshot store's folder
	opts    Options
	s       *Snapshots
	session store.Session
	scope   policy.Scope

	mu    sync.Mutex
	reads []string // files whose content the walks read
}

func newEnv(t testing.TB, opts Options) *env {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ctx: context.Background(), root: root, dbPath: filepath.Join(t.TempDir(), "jean2.db"), dir: filepath.Join(t.TempDir(), "undo")}
	e.db, err = store.Open(e.ctx, e.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.db.Close() })
	w, err := e.db.CreateWorkspace(e.ctx, store.Workspace{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	e.session, err = e.db.CreateSession(e.ctx, store.Session{WorkspaceID: w.ID, Title: "t"})
	if err != nil {
		t.Fatal(err)
	}
	e.scope = policy.Scope{Workspace: root, Home: t.TempDir(), TempDir: t.TempDir()}
	opts.Dir = e.dir
	e.opts = opts
	e.open()
	return e
}

// open makes a new Snapshots over the store's folder, as a restarted server does.
func (e *env) open() {
	e.t.Helper()
	s, err := New(e.opts)
	if err != nil {
		e.t.Fatal(err)
	}
	s.onRead = func(p string) {
		e.mu.Lock()
		e.reads = append(e.reads, p)
		e.mu.Unlock()
	}
	e.s = s
	e.t.Cleanup(func() { s.Close() })
}

// restart closes the snapshot store and the database and opens both again.
func (e *env) restart() {
	e.t.Helper()
	if err := e.s.Close(); err != nil {
		e.t.Fatal(err)
	}
	if err := e.db.Close(); err != nil {
		e.t.Fatal(err)
	}
	db, err := store.Open(e.ctx, e.dbPath)
	if err != nil {
		e.t.Fatal(err)
	}
	e.db = db
	e.t.Cleanup(func() { db.Close() })
	e.open()
}

func (e *env) takeReads() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.reads
	e.reads = nil
	return r
}

func (e *env) path(rel string) string { return filepath.Join(e.root, filepath.FromSlash(rel)) }

// sh runs a shell command in the workspace, as a tool's subprocess would.
func (e *env) sh(script string) {
	e.t.Helper()
	cmd := exec.CommandContext(e.ctx, "sh", "-ec", script)
	cmd.Dir = e.root
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	if out, err := cmd.CombinedOutput(); err != nil {
		e.t.Fatalf("sh -c %q: %v\n%s", script, err, out)
	}
}

func (e *env) write(rel, content string, mode fs.FileMode) {
	e.t.Helper()
	p := e.path(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		e.t.Fatal(err)
	}
}

// turnMsgs are the messages of one turn.
type turnMsgs struct {
	user, assistant store.Message
	ledger          store.Ledger
}

// turn runs one turn: Begin, then do with the call's ctx.fs, then Finish and File. It
// returns the messages and the filed ledger.
func (e *env) turn(do func(f *toolfs.FS)) turnMsgs {
	e.t.Helper()
	var m turnMsgs
	var err error
	m.user, err = e.db.AppendMessage(e.ctx, store.Message{SessionID: e.session.ID, Role: store.RoleUser, Content: "go"})
	if err != nil {
		e.t.Fatal(err)
	}
	turn, err := e.s.Begin(e.ctx, TurnSpec{SessionID: e.session.ID, Roots: []string{e.root}})
	if err != nil {
		e.t.Fatal(err)
	}
	ledger := tool.NewLedger()
	if do != nil {
		do(toolfs.New(toolfs.Options{Scope: e.scope, Tool: "edit", CallID: "call-1", Ledger: ledger}))
	}
	if _, err := turn.Finish(e.ctx, ledger.Changes()); err != nil {
		e.t.Fatal(err)
	}
	m.assistant, err = e.db.AppendMessage(e.ctx, store.Message{SessionID: e.session.ID, Role: store.RoleAssistant, Content: "done"})
	if err != nil {
		e.t.Fatal(err)
	}
	m.ledger, err = turn.File(e.ctx, e.db, m.assistant.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

// tree describes every path under dir exactly (kind, mode, content or target), without
// following links.
func tree(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "link -> " + target
		case fi.IsDir():
			out[rel] = fmt.Sprintf("dir %v", fi.Mode())
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = fmt.Sprintf("file %v %x %q", fi.Mode(), sha256.Sum256(data), trim(data))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func trim(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

// sameTree fails the test with the differences when got and want differ.
func sameTree(t testing.TB, what string, got, want map[string]string) {
	t.Helper()
	if maps.Equal(got, want) {
		return
	}
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got[k] != want[k] {
			diffs = append(diffs, fmt.Sprintf("  %s: got %q, want %q", k, got[k], want[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("  %s: got %q, want nothing", k, got[k]))
		}
	}
	t.Fatalf("%s: the tree differs:\n%s", what, strings.Join(diffs, "\n"))
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// pathsOf lists the paths of changes made by tool (any tool when "").
func pathsOf(changes []tool.Change, toolName string) []string {
	var out []string
	for _, c := range changes {
		if toolName == "" || c.Tool == toolName {
			out = append(out, c.Path)
		}
	}
	return out
}

func userMsg(e *env) store.Message {
	return store.Message{SessionID: e.session.ID, Role: store.RoleUser, Content: "go"}
}

func assistantMsg(e *env) store.Message {
	return store.Message{SessionID: e.session.ID, Role: store.RoleAssistant, Content: "done"}
}

package ask

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/jean2/jean2/tool"
)

func newGrants(t testing.TB) *Grants {
	t.Helper()
	return NewGrants(nil)
}

func baseCall() Call {
	return Call{Tool: "reader", ToolVersion: "v1", CallID: "call-1", SessionID: "s1", WorkspaceID: "w1", Workspace: "/work/proj", Home: "/home/u"}
}

func fileAsk(path, op, risk string) tool.Ask {
	return tool.CreateFilePermissionAsk(tool.FilePermission{Path: path, Operation: op, Risk: risk, IsOutsideWorkspace: true})
}

func record(t *testing.T, g *Grants, c Call, a tool.Ask, d string) Grant {
	t.Helper()
	gr, err := g.Record(context.Background(), c, a, d)
	if err != nil {
		t.Fatal(err)
	}
	return gr
}

func covered(g *Grants, c Call, a tool.Ask) bool {
	_, ok := g.Lookup(c, a)
	return ok
}

func TestGrantsDurationScopes(t *testing.T) {
	a := fileAsk("/data/report.txt", "read", "medium")
	c1 := baseCall()
	sameSession := c1
	sameSession.CallID = "call-2"
	otherSession := sameSession
	otherSession.SessionID, otherSession.CallID = "s2", "call-3"
	otherWorkspace := otherSession
	otherWorkspace.WorkspaceID, otherWorkspace.CallID = "w2", "call-4"

	for _, c := range []struct {
		duration                                        string
		sameCall, sameSession, otherSession, otherWorks bool
	}{
		{tool.DurationOnce, true, false, false, false},
		{tool.DurationSession, true, true, false, false},
		{tool.DurationWorkspace, true, true, true, false},
	} {
		t.Run(c.duration, func(t *testing.T) {
			g := newGrants(t)
			record(t, g, c1, a, c.duration)
			got := []bool{covered(g, c1, a), covered(g, sameSession, a), covered(g, otherSession, a), covered(g, otherWorkspace, a)}
			want := []bool{c.sameCall, c.sameSession, c.otherSession, c.otherWorks}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("covered [same call, same session, other session, other workspace] = %v, want %v", got, want)
			}
			if g.Covers(c1, "/data/report.txt", false) != c.sameCall || g.Covers(sameSession, "/data/report.txt", false) != c.sameSession {
				t.Fatal("Covers disagrees with Lookup")
			}
			g.EndCall(c1.CallID)
			if c.duration == tool.DurationOnce && (covered(g, c1, a) || len(g.List()) != 0) {
				t.Fatal("a once grant outlived its call")
			}
			if c.duration != tool.DurationOnce && !covered(g, c1, a) {
				t.Fatal("EndCall dropped a longer grant")
			}
		})
	}
}

func TestGrantsWorkspaceWithoutID(t *testing.T) {
	g := newGrants(t)
	a := fileAsk("/data/x", "read", "low")
	c := baseCall()
	c.WorkspaceID = ""
	record(t, g, c, a, tool.DurationWorkspace)
	same := c
	same.CallID, same.SessionID = "call-9", "s9"
	if !covered(g, same, a) {
		t.Fatal("workspace grant does not reach another session of the same workspace path")
	}
	other := same
	other.Workspace = "/work/other"
	if covered(g, other, a) {
		t.Fatal("workspace grant leaked into another workspace path")
	}
}

func TestGrantsToolVersionChangeAsksAgain(t *testing.T) {
	g := newGrants(t)
	a := fileAsk("/data/x", "read", "low")
	c := baseCall()
	record(t, g, c, a, tool.DurationWorkspace)
	changed := c
	changed.ToolVersion = "v2"
	if covered(g, changed, a) || g.Covers(changed, "/data/x", false) {
		t.Fatal("a grant to v1 covers v2 of the tool")
	}
	otherTool := c
	otherTool.Tool = "writer"
	if covered(g, otherTool, a) || g.Covers(otherTool, "/data/x", false) {
		t.Fatal("a grant to one tool covers another")
	}
}

func TestGrantsDirectoryCoverage(t *testing.T) {
	g := newGrants(t)
	c := baseCall()
	dir := tool.Ask{Type: tool.AskPermission, Question: "Read the project /a/proj?", Risk: "medium", Resource: "file", Paths: []string{"/a/proj"}}
	record(t, g, c, dir, tool.DurationSession)
	for p, want := range map[string]bool{
		"/a/proj": true, "/a/proj/x": true, "/a/proj/x/y.txt": true, "/a/proj/../proj/z": true,
		"/a/proj-x": false, "/a/proj-x/y": false, "/a": false, "/a/pro": false, "/b/proj": false,
	} {
		if got := g.Covers(c, p, false); got != want {
			t.Errorf("Covers(%s) = %v, want %v", p, got, want)
		}
		if got := covered(g, c, fileAsk(p, "read", "low")); got != want {
			t.Errorf("Lookup(%s) = %v, want %v", p, got, want)
		}
	}

	file := fileAsk("/b/notes.txt", "read", "medium")
	record(t, g, c, file, tool.DurationSession)
	if !g.Covers(c, "/b/notes.txt", false) || g.Covers(c, "/b/notes.txt.bak", false) || g.Covers(c, "/b/other.txt", false) {
		t.Fatal("a file grant must cover exactly that file")
	}
	// Same base name elsewhere: the "file:notes.txt" pattern alone must not cover it.
	if covered(g, c, fileAsk("/c/notes.txt", "read", "medium")) {
		t.Fatal("a grant for /b/notes.txt covers /c/notes.txt")
	}
	// Relative paths resolve against the call's workspace.
	rel := tool.Ask{Type: tool.AskPermission, Question: "Read src?", Risk: "low", Resource: "file", Paths: []string{"src"}}
	record(t, g, c, rel, tool.DurationOnce)
	if !g.Covers(c, "/work/proj/src/main.go", false) || !g.Covers(c, "src/main.go", false) {
		t.Fatal("a relative grant path is not taken against the workspace")
	}
}

func TestGrantsFollowSymlinks(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "real")
	link := filepath.Join(root, "link")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	g := newGrants(t)
	c := baseCall()
	record(t, g, c, tool.Ask{Type: tool.AskPermission, Question: "Read the link?", Risk: "low", Resource: "file", Paths: []string{link}}, tool.DurationOnce)
	if !g.Covers(c, filepath.Join(real, "f.txt"), false) || !g.Covers(c, filepath.Join(link, "f.txt"), false) {
		t.Fatal("a grant through a symlink does not cover the real location")
	}
	g2 := newGrants(t)
	record(t, g2, c, tool.Ask{Type: tool.AskPermission, Question: "Read real?", Risk: "low", Resource: "file", Paths: []string{real}}, tool.DurationOnce)
	if !g2.Covers(c, filepath.Join(link, "f.txt"), false) {
		t.Fatal("a path reached through a symlink is not covered by a grant on its real location")
	}
}

func TestGrantsAccessAndRisk(t *testing.T) {
	g := newGrants(t)
	c := baseCall()
	record(t, g, c, fileAsk("/data/a.txt", "read", "medium"), tool.DurationSession)
	if covered(g, c, fileAsk("/data/a.txt", "write", "medium")) {
		t.Fatal("a read grant covers a write ask")
	}
	if !g.Covers(c, "/data/a.txt", false) || g.Covers(c, "/data/a.txt", true) {
		t.Fatal("a read grant must cover reading and not writing")
	}
	if covered(g, c, fileAsk("/data/a.txt", "read", "high")) {
		t.Fatal("a medium-risk grant covers a high-risk ask")
	}
	if !covered(g, c, fileAsk("/data/a.txt", "read", "low")) {
		t.Fatal("a medium-risk grant does not cover a low-risk ask")
	}
	record(t, g, c, fileAsk("/data/b.txt", "edit", "high"), tool.DurationSession)
	if !g.Covers(c, "/data/b.txt", true) || !g.Covers(c, "/data/b.txt", false) || !covered(g, c, fileAsk("/data/b.txt", "read", "medium")) {
		t.Fatal("a write grant must cover reading and writing")
	}
	// A grant for another resource covers no file.
	record(t, g, c, tool.Ask{Type: tool.AskPermission, Question: "Fetch?", Risk: "low", Resource: "network", Paths: []string{"/data/c.txt"}}, tool.DurationSession)
	if g.Covers(c, "/data/c.txt", false) {
		t.Fatal("a network grant covers a file")
	}
}

func TestAccessOf(t *testing.T) {
	for q, want := range map[string]string{
		`Reading file "write.txt" (outside workspace) requires approval.`: AccessRead,
		`Writing file "notes.txt" requires approval.`:                     AccessWrite,
		`Editing file "a.go" (sensitive file) requires approval.`:         AccessWrite,
		"Read file outside workspace: /tmp/write-notes.txt?":              AccessRead,
		"Read file outside workspace: delete.me?":                         AccessRead,
		"Delete the build cache?":                                         AccessWrite,
		"Allow saving the report to ~/reports?":                           AccessWrite,
		"Read “the file you will write later”?":                           AccessRead,
		"List the directory?":                                             AccessRead,
	} {
		if got := accessOf(tool.Ask{Type: tool.AskPermission, Question: q}); got != want {
			t.Errorf("accessOf(%q) = %s, want %s", q, got, want)
		}
	}
	withMeta := tool.Ask{Type: tool.AskPermission, Question: "Delete it?", Metadata: []byte(`{"operation":"read"}`)}
	if accessOf(withMeta) != AccessRead {
		t.Error("metadata operation does not win over the question's words")
	}
	withMeta.Metadata = []byte(`{"access":"write"}`)
	withMeta.Question = "Touch it?"
	if accessOf(withMeta) != AccessWrite {
		t.Error("metadata access is ignored")
	}
}

func TestGrantsPathlessFileGrantCoversItsCallOnly(t *testing.T) {
	// The guide's word-count tool asks without paths, then reads the file.
	a := tool.Ask{Type: tool.AskPermission, Question: "Read file outside workspace: ../x.txt?", Risk: "medium", Resource: "file"}
	g := newGrants(t)
	c := baseCall()
	record(t, g, c, a, tool.DurationSession)
	if !g.Covers(c, "/anywhere/x.txt", false) {
		t.Fatal("a pathless file grant does not cover file reads in its own call")
	}
	if g.Covers(c, "/anywhere/x.txt", true) {
		t.Fatal("a pathless read grant covers writing")
	}
	next := c
	next.CallID = "call-2"
	if g.Covers(next, "/anywhere/x.txt", false) {
		t.Fatal("a pathless file grant covers files beyond its call")
	}
	if !covered(g, next, a) {
		t.Fatal("the same pathless question in the same session should not be asked again")
	}
	if covered(g, next, tool.Ask{Type: tool.AskPermission, Question: "Read file outside workspace: ../y.txt?", Risk: "medium", Resource: "file"}) {
		t.Fatal("a pathless grant covers a different question")
	}
}

func TestGrantsPatterns(t *testing.T) {
	g := newGrants(t)
	c := baseCall()
	a := tool.Ask{Type: tool.AskPermission, Question: "Run shell commands?", Risk: "high", Resource: "shell", Patterns: []string{"shell:git *"}}
	record(t, g, c, a, tool.DurationSession)
	if !covered(g, c, a) {
		t.Fatal("a pattern grant does not cover its pattern")
	}
	b := a
	b.Patterns = []string{"shell:git *", "shell:rm *"}
	if covered(g, c, b) {
		t.Fatal("an ask with an ungranted pattern is covered")
	}
	// A directory named by a file: pattern covers what lies below it, also for the asks
	// createFilePermissionAsk builds (their base-name and outside-workspace patterns only
	// restate the path).
	d := tool.Ask{Type: tool.AskPermission, Question: "Read the docs?", Risk: "medium", Resource: "file", Patterns: []string{"file:/srv/docs"}}
	record(t, g, c, d, tool.DurationSession)
	if !g.Covers(c, "/srv/docs/a.md", false) || !covered(g, c, fileAsk("/srv/docs/b.md", "read", "low")) {
		t.Fatal("a file: pattern grant does not cover what lies below it")
	}
	// A marker qualifies the path: a sensitive file below the directory is asked again…
	sensitive := tool.CreateFilePermissionAsk(tool.FilePermission{Path: "/srv/docs/.env", Operation: "read", Risk: "medium", IsSensitiveFile: true})
	if covered(g, c, sensitive) {
		t.Fatal("a directory grant covers an ask marked sensitive-file")
	}
	// …until the person grants that file with its marker.
	record(t, g, c, sensitive, tool.DurationSession)
	if !covered(g, c, sensitive) {
		t.Fatal("a granted sensitive file is asked again")
	}
	other := tool.CreateFilePermissionAsk(tool.FilePermission{Path: "/srv/docs/.npmrc", Operation: "read", Risk: "medium", IsSensitiveFile: true})
	if covered(g, c, other) {
		t.Fatal("the sensitive-file marker granted for one file covers another")
	}
}

func TestGrantsRevokeAndList(t *testing.T) {
	g := newGrants(t)
	c := baseCall()
	a := fileAsk("/data/a.txt", "read", "low")
	first := record(t, g, c, a, tool.DurationWorkspace)
	record(t, g, c, fileAsk("/data/b.txt", "read", "low"), tool.DurationSession)
	list := g.List()
	if len(list) != 2 || list[0].ID != first.ID || list[0].Tool != "reader" || list[0].ToolVersion != "v1" ||
		list[0].Duration != tool.DurationWorkspace || list[0].SessionID != "s1" || list[0].WorkspaceID != "w1" ||
		list[0].Risk != "low" || list[0].GrantedAt.IsZero() || list[0].Paths[0] != "/data/a.txt" {
		t.Fatalf("List = %+v", list)
	}
	if err := g.Revoke(context.Background(), first.ID); err != nil {
		t.Fatal(err)
	}
	if covered(g, c, a) || g.Covers(c, "/data/a.txt", false) {
		t.Fatal("a revoked grant still covers")
	}
	if err := g.Revoke(context.Background(), first.ID); !errors.Is(err, ErrUnknownGrant) {
		t.Fatalf("second revoke error = %v", err)
	}
	if err := g.EndSession(context.Background(), "s1"); err != nil || len(g.List()) != 0 {
		t.Fatalf("EndSession left %v (%v)", g.List(), err)
	}
}

// fakeStore is a Store whose behaviour each test sets.
type fakeStore struct {
	mu      sync.Mutex
	load    func() ([]Grant, error)
	saved   []Grant
	deleted []string
	saveErr error
}

func (s *fakeStore) LoadGrants(context.Context) ([]Grant, error) { return s.load() }
func (s *fakeStore) SaveGrant(_ context.Context, g Grant) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saved = append(s.saved, g)
	return s.saveErr
}
func (s *fakeStore) DeleteGrant(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deleted = append(s.deleted, id)
	return nil
}

func TestGrantsStore(t *testing.T) {
	c := baseCall()
	stored := Grant{ID: "g_old", Tool: "reader", ToolVersion: "v1", Resource: "file", Question: "q", Paths: []string{"/data/old"},
		Access: AccessRead, Risk: "medium", Duration: tool.DurationWorkspace, CallID: "call-0", WorkspaceID: "w1"}
	once := stored
	once.ID, once.Duration = "g_once", tool.DurationOnce
	once.CallID = c.CallID
	st := &fakeStore{load: func() ([]Grant, error) { return []Grant{stored, once}, nil }}
	g := NewGrants(&GrantsOptions{Store: st})
	if err := g.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !g.Covers(c, "/data/old/f", false) || len(g.List()) != 1 {
		t.Fatalf("loaded grants = %+v", g.List())
	}
	record(t, g, c, fileAsk("/data/once", "read", "low"), tool.DurationOnce)
	s := record(t, g, c, fileAsk("/data/sess", "read", "low"), tool.DurationSession)
	if len(st.saved) != 1 || st.saved[0].ID != s.ID {
		t.Fatalf("saved %+v; want only the session grant", st.saved)
	}
	if err := g.Revoke(context.Background(), "g_old"); err != nil || len(st.deleted) != 1 || st.deleted[0] != "g_old" {
		t.Fatalf("revoke: %v, deleted %v", err, st.deleted)
	}

	st.saveErr = errors.New("disk full")
	_, err := g.Record(context.Background(), c, fileAsk("/data/w", "read", "low"), tool.DurationWorkspace)
	if err == nil || !errors.Is(err, st.saveErr) {
		t.Fatalf("store failure not reported: %v", err)
	}
	if !g.Covers(c, "/data/w", false) {
		t.Fatal("a grant whose saving failed does not hold in memory")
	}

	err = NewGrants(&GrantsOptions{Store: &fakeStore{load: func() ([]Grant, error) { return nil, errors.New("locked") }}}).Load(context.Background())
	if err == nil || err.Error() != "load grants: locked" {
		t.Fatalf("load failure = %v", err)
	}
}

func TestGrantsRecordRejects(t *testing.T) {
	g := newGrants(t)
	if _, err := g.Record(context.Background(), baseCall(), fileAsk("/x", "read", "low"), "forever"); err == nil {
		t.Fatal("unknown duration accepted")
	}
	if _, err := g.Record(context.Background(), baseCall(), tool.Ask{Type: tool.AskText, Question: "?"}, tool.DurationOnce); err == nil {
		t.Fatal("a text ask was recorded as a grant")
	}
}

func TestGrantsConcurrentUse(t *testing.T) {
	g := newGrants(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := baseCall()
			c.CallID = fmt.Sprintf("call-%d", i)
			for j := range 50 {
				p := fmt.Sprintf("/data/%d/%d", i, j)
				gr := record(t, g, c, fileAsk(p, "read", "low"), tool.DurationSession)
				if !g.Covers(c, p, false) || !covered(g, c, fileAsk(p, "read", "low")) {
					t.Errorf("grant %s not visible", p)
				}
				if j%2 == 0 {
					if err := g.Revoke(context.Background(), gr.ID); err != nil {
						t.Error(err)
					}
				}
				_ = g.List()
			}
			g.EndCall(c.CallID)
		}()
	}
	wg.Wait()
	if n := len(g.List()); n != 8*25 {
		t.Fatalf("%d grants left, want %d", n, 8*25)
	}
}

// Two Grants sharing a store, as two instances of a cluster do: a grant recorded by one is
// taken up by the other's Adopt; one forgotten or revoked is never brought back by an Adopt
// that read the store before its deletion.
func TestGrantsAdoptAndForget(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var rows []Grant
	st := &fakeStore{load: func() ([]Grant, error) {
		mu.Lock()
		defer mu.Unlock()
		return append([]Grant(nil), rows...), nil
	}}
	a := NewGrants(&GrantsOptions{Store: st, Shared: true})
	b := NewGrants(&GrantsOptions{Store: st, Shared: true})
	c := baseCall()
	ask := fileAsk("/data/a.txt", "read", "low")
	gr := record(t, a, c, ask, tool.DurationWorkspace)
	record(t, a, c, fileAsk("/data/once", "read", "low"), tool.DurationOnce)
	mu.Lock()
	rows = append(rows, st.saved...)
	mu.Unlock()
	if covered(b, c, ask) {
		t.Fatal("b covers before adopting")
	}
	if n, err := b.Adopt(ctx); err != nil || n != 1 {
		t.Fatalf("Adopt = %d, %v; want the workspace grant only", n, err)
	}
	if !covered(b, c, ask) || !b.Covers(c, "/data/a.txt", false) {
		t.Fatal("b does not use the grant it adopted")
	}
	if n, _ := b.Adopt(ctx); n != 0 || len(b.List()) != 1 {
		t.Fatalf("a second Adopt took %d, holds %+v", n, b.List())
	}
	// Revoked through a: b forgets it, and the store still holding it (b read it before
	// a's deletion) brings nothing back.
	if !b.Forget(gr.ID) || covered(b, c, ask) {
		t.Fatal("Forget left the grant")
	}
	if n, _ := b.Adopt(ctx); n != 0 || covered(b, c, ask) {
		t.Fatalf("Adopt brought back a forgotten grant (%d)", n)
	}
	// Forgotten before it was ever taken up: never taken up.
	other := NewGrants(&GrantsOptions{Store: st, Shared: true})
	if other.Forget(gr.ID) {
		t.Fatal("Forget of a grant not held says it held it")
	}
	if n, _ := other.Adopt(ctx); n != 0 {
		t.Fatalf("Adopt took up %d forgotten grants", n)
	}
	// Revoked here: the same.
	if err := a.Revoke(ctx, gr.ID); err != nil {
		t.Fatal(err)
	}
	if n, _ := a.Adopt(ctx); n != 0 || covered(a, c, ask) {
		t.Fatalf("Adopt brought back a revoked grant (%d)", n)
	}
}

// With a shared store, a permission that no grant held here covers is looked up in the
// store before the person is asked: a grant another instance recorded a moment ago (its
// announcement not yet arrived) is used, and nobody is asked. Without Shared the person is
// asked, as a lone instance always did.
func TestBrokerReadsSharedGrantsBeforeAsking(t *testing.T) {
	for _, shared := range []bool{true, false} {
		var mu sync.Mutex
		var rows []Grant
		st := &fakeStore{load: func() ([]Grant, error) {
			mu.Lock()
			defer mu.Unlock()
			return append([]Grant(nil), rows...), nil
		}}
		other := NewGrants(&GrantsOptions{Store: st, Shared: shared})
		here := NewGrants(&GrantsOptions{Store: st, Shared: shared})
		c := baseCall()
		a := tool.Ask{Type: tool.AskPermission, Question: "May I deploy?", Risk: "high", Resource: "deploy"}
		record(t, other, c, a, tool.DurationWorkspace)
		mu.Lock()
		rows = append(rows, st.saved...)
		mu.Unlock()

		asker := &fakeAsker{ask: func(tool.Ask) (json.RawMessage, error) { return json.RawMessage(`true`), nil }}
		c2 := c
		c2.CallID, c2.SessionID = "call-2", "s2" // another session of the workspace
		v, err := newBroker(asker, here, c2).Ask(context.Background(), a)
		if err != nil || string(v) != "true" {
			t.Fatalf("shared=%v: %s, %v", shared, v, err)
		}
		if asked := asker.calls.Load() > 0; asked == shared {
			t.Fatalf("shared=%v: the person was asked: %v", shared, asked)
		}
	}
}

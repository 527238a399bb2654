package store

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/ask"
	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/tool"
	"github.com/jean2/jean2/toolfs"
)

func allBytes() []byte {
	b := make([]byte, 0, 512)
	for i := range 512 {
		b = append(b, byte(i*7))
	}
	return b
}

func TestFileStateRoundTripIsExact(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		s := mustSession(t, db, mustWorkspace(t, db, "/proj").ID)
		m, err := db.AppendMessage(ctx, Message{SessionID: s.ID, Role: RoleAssistant})
		if err != nil {
			t.Fatal(err)
		}
		at := time.Now().Truncate(time.Millisecond).UTC()
		changes := []tool.Change{
			{Path: "/proj/bin.dat", Tool: "write", CallID: "c1", Op: "write", Disk: true, OK: true, At: at,
				Before: &tool.FileState{Exists: true, Mode: 0o755 | fs.ModeSetuid, Content: allBytes()}},
			{Path: "/proj/empty", Tool: "write", Op: "write", Disk: true, OK: true, At: at,
				Before: &tool.FileState{Exists: true, Mode: 0o600}},
			{Path: "/proj/new.txt", Tool: "write", Op: "write", Disk: true, OK: true, At: at,
				Before: &tool.FileState{Exists: false}},
			{Path: "/proj/dir", Tool: "rm", Op: "rm", Disk: true, OK: true, At: at,
				Before: &tool.FileState{Exists: true, IsDir: true, Mode: fs.ModeDir | 0o750, Entries: []tool.DirState{
					{Name: "a.txt", State: tool.FileState{Exists: true, Mode: 0o644, Content: []byte("alpha\x00\n")}},
					{Name: "sub", State: tool.FileState{Exists: true, IsDir: true, Mode: fs.ModeDir | 0o700, Entries: []tool.DirState{
						{Name: "b.bin", State: tool.FileState{Exists: true, Mode: 0o640, Content: []byte{0xff, 0xfe, 0}}},
						{Name: "link", State: tool.FileState{Exists: true, Mode: fs.ModeSymlink | 0o777, Content: []byte("../a.txt")}},
					}}},
				}}},
			{Path: "/proj/huge.log", Tool: "write", Op: "append", Disk: true, OK: true, At: at,
				Before: &tool.FileState{Exists: true, Mode: 0o644, Incomplete: "larger than 64 MiB"}},
			{Path: "/etc/passwd", Tool: "write", Op: "write", Disk: false, OK: false, Error: "blocked path", At: at},
			{Path: "/proj/self", Tool: "rename_page", Disk: true, OK: true, At: at},
		}
		l, err := db.FileLedger(ctx, s.ID, m.ID, changes)
		if err != nil {
			t.Fatal(err)
		}
		db = reopen(t, db)
		got, err := db.LedgerForMessage(ctx, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != l.ID || got.SessionID != s.ID || got.MessageSeq != m.Seq || len(got.Changes) != len(changes) {
			t.Fatalf("ledger %+v", got)
		}
		for i := range changes {
			want, have := changes[i], got.Changes[i]
			if !reflect.DeepEqual(normalize(want), normalize(have)) {
				t.Errorf("change %d:\n got  %+v\n want %+v", i, have, want)
			}
		}
		if !bytes.Equal(got.Changes[0].Before.Content, allBytes()) || got.Changes[0].Before.Mode != 0o755|fs.ModeSetuid {
			t.Fatal("binary content or mode bits changed on the way")
		}
		// The contents sit in the BLOB as raw bytes, not as base64 inside the JSON.
		var shape string
		var data []byte
		if err := db.read.QueryRowContext(ctx, `SELECT before_state, before_data FROM ledger_changes WHERE ledger_id = ? AND seq = 1`, l.ID).
			Scan(&shape, &data); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, allBytes()) || strings.Contains(shape, "content") {
			t.Fatalf("stored shape %s with %d bytes of data", shape, len(data))
		}
	})
}

// normalize makes nil and empty contents and entry lists compare equal: both mean "none".
func normalize(c tool.Change) tool.Change {
	if c.Before != nil {
		s := normState(*c.Before)
		c.Before = &s
	}
	return c
}

func normState(s tool.FileState) tool.FileState {
	if len(s.Content) == 0 {
		s.Content = nil
	}
	if len(s.Entries) == 0 {
		s.Entries = nil
	}
	for i := range s.Entries {
		s.Entries[i].State = normState(s.Entries[i].State)
	}
	return s
}

func TestDecodeStateRejectsSpansOutsideTheData(t *testing.T) {
	if _, err := decodeState(`{"exists":true,"off":2,"len":5}`, []byte("abc")); err == nil {
		t.Fatal("a content span past the stored bytes was accepted")
	}
}

// TestRestoreToHereAcrossRestart records real file changes through toolfs over three turns,
// files each turn's ledger, restarts the database, and restores to the second turn: the
// files are as they were before it, and the first turn's change stays.
func TestRestoreToHereAcrossRestart(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		root := t.TempDir()
		root, _ = filepath.EvalSymlinks(root)
		w := mustWorkspace(t, db, root)
		s := mustSession(t, db, w.ID)
		scope := policy.Scope{Workspace: root, Home: t.TempDir(), TempDir: t.TempDir()}
		notes := filepath.Join(root, "notes.txt")
		if err := os.WriteFile(notes, []byte("v0"), 0o644); err != nil {
			t.Fatal(err)
		}

		var users, assistants []Message
		turn := func(n int, do func(f *toolfs.FS)) {
			u, err := db.AppendMessage(ctx, Message{SessionID: s.ID, Role: RoleUser, Content: "turn"})
			if err != nil {
				t.Fatal(err)
			}
			a, err := db.AppendMessage(ctx, Message{SessionID: s.ID, Role: RoleAssistant, Content: "done"})
			if err != nil {
				t.Fatal(err)
			}
			ledger := tool.NewLedger()
			do(toolfs.New(toolfs.Options{Scope: scope, Tool: "edit", CallID: "call", Ledger: ledger}))
			if _, err := db.FileLedger(ctx, s.ID, a.ID, ledger.Changes()); err != nil {
				t.Fatalf("turn %d: %v", n, err)
			}
			users, assistants = append(users, u), append(assistants, a)
		}
		must := func(err error) {
			if err != nil {
				t.Fatal(err)
			}
		}
		turn(1, func(f *toolfs.FS) { must(f.WriteFile(ctx, notes, []byte("v1"))) })
		turn(2, func(f *toolfs.FS) {
			must(f.WriteFile(ctx, notes, []byte("v2")))
			must(f.WriteFile(ctx, filepath.Join(root, "sub", "new.bin"), []byte{0, 1, 2}))
		})
		turn(3, func(f *toolfs.FS) {
			must(f.AppendFile(ctx, notes, []byte("+3")))
			must(f.Remove(ctx, filepath.Join(root, "sub"), true))
		})

		db = reopen(t, db)

		if _, err := db.FileLedger(ctx, s.ID, assistants[0].ID, nil); !errors.Is(err, ErrConflict) {
			t.Fatalf("a second ledger for one message: %v", err)
		}
		other := mustSession(t, db, w.ID)
		if _, err := db.FileLedger(ctx, other.ID, users[0].ID, nil); err == nil || !strings.Contains(err.Error(), "belongs to session") {
			t.Fatalf("a ledger filed under another session's message: %v", err)
		}

		ids := func(ls []Ledger) []string {
			var out []string
			for _, l := range ls {
				out = append(out, l.MessageID)
			}
			return out
		}
		// From the user message that started turn 2, and from turn 2's own message: turns 2 and 3.
		for _, at := range []Message{users[1], assistants[1]} {
			ls, err := db.RestorePoint(ctx, at.ID)
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{assistants[1].ID, assistants[2].ID}; !reflect.DeepEqual(ids(ls), want) {
				t.Fatalf("RestorePoint(seq %d) = %v, want %v", at.Seq, ids(ls), want)
			}
		}
		if ls, _ := db.RestorePoint(ctx, assistants[2].ID); len(ls) != 1 {
			t.Fatalf("restore point at the last turn: %d ledgers", len(ls))
		}
		if ls, _ := db.RestorePoint(ctx, users[0].ID); len(ls) != 3 {
			t.Fatalf("restore point at the first message: %d ledgers", len(ls))
		}
		if _, err := db.RestorePoint(ctx, "msg_nope"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("restore point at a missing message: %v", err)
		}

		ls, err := db.RestorePoint(ctx, users[1].ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := toolfs.Restore(AllChanges(ls)); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(notes); err != nil || string(b) != "v1" {
			t.Fatalf("notes.txt = %q, %v; want v1 (turn 1 kept, turns 2 and 3 undone)", b, err)
		}
		if _, err := os.Stat(filepath.Join(root, "sub")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("sub/ should not exist before turn 2: %v", err)
		}
		var lids []string
		for _, l := range ls {
			lids = append(lids, l.ID)
		}
		if err := db.MarkRestored(ctx, lids...); err != nil {
			t.Fatal(err)
		}
		all, err := db.ListLedgers(ctx, s.ID)
		if err != nil || len(all) != 3 || !all[0].RestoredAt.IsZero() || all[1].RestoredAt.IsZero() || all[2].RestoredAt.IsZero() {
			t.Fatalf("ListLedgers after MarkRestored = %+v, %v", all, err)
		}
		if err := db.MarkRestored(ctx, "led_nope"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("MarkRestored of a missing ledger: %v", err)
		}
	})
}

func TestGrantsRoundTripThroughAskGrants(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		call := ask.Call{Tool: "reader", ToolVersion: "v1", CallID: "call-1", SessionID: "s1", WorkspaceID: "w1", Workspace: "/work/proj", Home: "/home/u"}
		fileAsk := func(p string) tool.Ask {
			return tool.CreateFilePermissionAsk(tool.FilePermission{Path: p, Operation: "read", Risk: "medium", IsOutsideWorkspace: true})
		}

		g := ask.NewGrants(&ask.GrantsOptions{Store: db})
		sessionGrant, err := g.Record(ctx, call, fileAsk("/data/a.txt"), tool.DurationSession)
		if err != nil {
			t.Fatal(err)
		}
		workspaceGrant, err := g.Record(ctx, call, fileAsk("/data/b.txt"), tool.DurationWorkspace)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Record(ctx, call, fileAsk("/data/c.txt"), tool.DurationOnce); err != nil {
			t.Fatal(err)
		}

		db = reopen(t, db)
		g2 := ask.NewGrants(&ask.GrantsOptions{Store: db})
		if err := g2.Load(ctx); err != nil {
			t.Fatal(err)
		}
		list := g2.List()
		if len(list) != 2 {
			t.Fatalf("reloaded %d grants, want the session and workspace ones: %+v", len(list), list)
		}
		byID := map[string]ask.Grant{}
		for _, gr := range list {
			byID[gr.ID] = gr
		}
		for _, want := range []ask.Grant{sessionGrant, workspaceGrant} {
			got := byID[want.ID]
			if !got.GrantedAt.Equal(want.GrantedAt) {
				t.Errorf("grant %s time %v, want %v", want.ID, got.GrantedAt, want.GrantedAt)
			}
			got.GrantedAt = want.GrantedAt
			if !reflect.DeepEqual(got, want) {
				t.Errorf("grant round trip:\n got  %+v\n want %+v", got, want)
			}
		}
		later := call
		later.CallID = "call-2"
		if _, ok := g2.Lookup(later, fileAsk("/data/a.txt")); !ok {
			t.Fatal("a session grant did not survive the restart")
		}
		if _, ok := g2.Lookup(later, fileAsk("/data/c.txt")); ok {
			t.Fatal("a once grant survived its call")
		}
		if err := g2.Revoke(ctx, workspaceGrant.ID); err != nil {
			t.Fatal(err)
		}
		stored, err := db.LoadGrants(ctx)
		if err != nil || len(stored) != 1 || stored[0].ID != sessionGrant.ID {
			t.Fatalf("after revoke the store holds %+v, %v", stored, err)
		}
		if err := g2.EndSession(ctx, "s1"); err != nil {
			t.Fatal(err)
		}
		if stored, _ = db.LoadGrants(ctx); len(stored) != 0 {
			t.Fatalf("EndSession left %+v in the store", stored)
		}
		if err := db.SaveGrant(ctx, ask.Grant{}); err == nil {
			t.Fatal("a grant without id was saved")
		}
	})
}

// TestReopenKeepsEverything writes one of each kind of row, closes the database the way a
// stopping server does, and finds all of it again.
func TestReopenKeepsEverything(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		w, err := db.CreateWorkspace(ctx, Workspace{Name: "p", Path: "/p", AllowedPaths: []string{"/q"}})
		if err != nil {
			t.Fatal(err)
		}
		s := mustSession(t, db, w.ID)
		m, err := db.AppendMessage(ctx, Message{SessionID: s.ID, Role: RoleAssistant, Content: "x", Status: StatusStreaming,
			Parts: []Part{{Kind: PartToolCall, ToolName: "t", CallID: "c", Args: `{"a":1}`, Status: StatusRunning}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.FileLedger(ctx, s.ID, m.ID, []tool.Change{{Path: "/p/f", Tool: "t", Disk: true, OK: true,
			Before: &tool.FileState{Exists: true, Mode: 0o644, Content: []byte("old")}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.AppendEvents(ctx, s.ID, NewEvent{Type: "e"}); err != nil {
			t.Fatal(err)
		}
		if err := db.SaveGrant(ctx, ask.Grant{ID: "g_1", Tool: "t", Duration: tool.DurationWorkspace, GrantedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		_, secret, err := db.CreateAuthToken(ctx, "cli")
		if err != nil {
			t.Fatal(err)
		}
		wantMsgs, _ := db.ListMessages(ctx, s.ID)

		db = reopen(t, db)
		if got, err := db.Workspace(ctx, w.ID); err != nil || !reflect.DeepEqual(got, w) {
			t.Fatalf("workspace %+v, %v", got, err)
		}
		if got, err := db.Session(ctx, s.ID); err != nil || got.ID != s.ID {
			t.Fatalf("session %+v, %v", got, err)
		}
		if got, err := db.ListMessages(ctx, s.ID); err != nil || !reflect.DeepEqual(got, wantMsgs) {
			t.Fatalf("messages %+v, %v; want %+v", got, err, wantMsgs)
		}
		if l, err := db.LedgerForMessage(ctx, m.ID); err != nil || string(l.Changes[0].Before.Content) != "old" {
			t.Fatalf("ledger %+v, %v", l, err)
		}
		if evs, err := db.EventsAfter(ctx, s.ID, 0, 0); err != nil || len(evs) != 1 {
			t.Fatalf("events %+v, %v", evs, err)
		}
		if gs, err := db.LoadGrants(ctx); err != nil || len(gs) != 1 {
			t.Fatalf("grants %+v, %v", gs, err)
		}
		if _, err := db.VerifyAuthToken(ctx, secret); err != nil {
			t.Fatal(err)
		}
	})
}

package store

import (
	"context"
	"errors"
	"io/fs"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestUndoTurnRoundTripAndRules(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		s := mustSession(t, db, mustWorkspace(t, db, "/proj").ID)
		m, err := db.AppendMessage(ctx, Message{SessionID: s.ID, Role: RoleAssistant})
		if err != nil {
			t.Fatal(err)
		}
		at := time.Now().Truncate(time.Millisecond).UTC()
		after := []UndoState{
			{Path: "/proj/a.txt", Exists: true, Kind: "file", Mode: 0o644, Size: 3, Hash: []byte{1, 2, 3}},
			{Path: "/proj/big.bin", Exists: true, Kind: "file", Mode: 0o600, Size: 1 << 40, ModTime: 1234567890123456789},
			{Path: "/proj/dir", Exists: true, Kind: "dir", Mode: fs.ModeDir | 0o750},
			{Path: "/proj/gone", Exists: false},
			{Path: "/proj/link", Exists: true, Kind: "symlink", Mode: fs.ModeSymlink | 0o777, Target: "../x"},
		}
		// A first save is replaced by the second: only the latest record counts.
		if err := db.SaveUndoTurn(ctx, UndoTurn{MessageID: m.ID, SessionID: s.ID, TurnID: "turn-0", After: after[:1]}); err != nil {
			t.Fatal(err)
		}
		if err := db.SaveUndoTurn(ctx, UndoTurn{MessageID: m.ID, SessionID: s.ID, TurnID: "turn-1", CreatedAt: at, After: after}); err != nil {
			t.Fatal(err)
		}
		db = reopen(t, db)
		got, err := db.UndoTurns(ctx, m.ID, "msg_without_record")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 {
			t.Fatalf("UndoTurns = %+v, want one record", got)
		}
		rec := got[m.ID]
		if rec.TurnID != "turn-1" || !rec.CreatedAt.Equal(at) || rec.SessionID != s.ID {
			t.Fatalf("record %+v", rec)
		}
		for i := range after {
			if len(after[i].Hash) == 0 {
				after[i].Hash = nil
			}
		}
		for i := range rec.After {
			if len(rec.After[i].Hash) == 0 {
				rec.After[i].Hash = nil
			}
		}
		if !reflect.DeepEqual(rec.After, after) {
			t.Fatalf("after-states:\n got  %+v\n want %+v", rec.After, after)
		}

		other := mustSession(t, db, mustWorkspace(t, db, "/other").ID)
		if err := db.SaveUndoTurn(ctx, UndoTurn{MessageID: m.ID, SessionID: other.ID}); err == nil || !strings.Contains(err.Error(), "belongs to session") {
			t.Fatalf("a record under another session's message: %v", err)
		}
		if err := db.SaveUndoTurn(ctx, UndoTurn{MessageID: "msg_nope", SessionID: s.ID}); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a record under a missing message: %v", err)
		}
		if err := db.SaveUndoTurn(ctx, UndoTurn{MessageID: m.ID, SessionID: s.ID, After: []UndoState{{Path: "/p", Kind: "fifo"}}}); err == nil {
			t.Fatal("an unknown kind was stored")
		}
		if err := db.SaveUndoTurn(ctx, UndoTurn{MessageID: m.ID, SessionID: s.ID, After: []UndoState{{Path: "/p"}, {Path: "/p"}}}); !errors.Is(err, ErrConflict) {
			t.Fatalf("a path named twice: %v", err)
		}
		if _, err := db.FileLedger(ctx, s.ID, m.ID, nil); err != nil {
			t.Fatal(err)
		}
		if err := db.SaveUndoTurn(ctx, UndoTurn{MessageID: m.ID, SessionID: s.ID}); !errors.Is(err, ErrConflict) {
			t.Fatalf("a record after the ledger was filed: %v", err)
		}
		if got, _ := db.UndoTurns(ctx, m.ID); len(got[m.ID].After) != len(after) {
			t.Fatal("a refused save changed the stored record")
		}

		// Deleting the session takes its undo records with it.
		if err := db.DeleteSession(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := db.read.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM undo_turns) + (SELECT COUNT(*) FROM undo_after_states)`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("%d undo rows left after the session was deleted (%v)", n, err)
		}
	})
}

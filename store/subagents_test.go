package store

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// A child session is stored with its parent, call and tools in one write; it is listed
// under its parent and its workspace; a session a person started has no parent; the row
// goes with its session.
func TestChildSessions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		w := mustWorkspace(t, db, "/proj")
		parent := mustSession(t, db, w.ID)
		child, sub, err := db.CreateChildSession(ctx, Session{WorkspaceID: w.ID, Title: "look around"},
			Subagent{ParentSessionID: parent.ID, ParentCallID: "call_1", Tools: []string{"read"}, Instructions: "be brief"})
		if err != nil {
			t.Fatal(err)
		}
		all, _, err := db.CreateChildSession(ctx, Session{WorkspaceID: w.ID}, Subagent{ParentSessionID: parent.ID, ParentCallID: "call_2"})
		if err != nil {
			t.Fatal(err)
		}
		got, err := db.Subagent(ctx, child.ID)
		if err != nil || got.ParentSessionID != parent.ID || got.ParentCallID != "call_1" || !slices.Equal(got.Tools, []string{"read"}) ||
			got.Instructions != "be brief" || got.SessionID != sub.SessionID {
			t.Fatalf("subagent %+v, %v", got, err)
		}
		if got, err := db.Subagent(ctx, all.ID); err != nil || got.Tools != nil {
			t.Fatalf("a child given all its parent's tools: %+v, %v", got, err)
		}
		if _, err := db.Subagent(ctx, parent.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("the parent's parent: %v", err)
		}
		kids, err := db.Children(ctx, parent.ID)
		if err != nil || len(kids) != 2 || kids[0].SessionID != child.ID || kids[1].SessionID != all.ID {
			t.Fatalf("children %+v, %v", kids, err)
		}
		if ws, err := db.WorkspaceChildren(ctx, w.ID); err != nil || len(ws) != 2 {
			t.Fatalf("workspace children %+v, %v", ws, err)
		}
		if _, _, err := db.CreateChildSession(ctx, Session{WorkspaceID: "ws_gone"}, Subagent{ParentSessionID: parent.ID}); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a child in no workspace: %v", err)
		}
		if err := db.DeleteSession(ctx, child.ID); err != nil {
			t.Fatal(err)
		}
		if kids, err := db.Children(ctx, parent.ID); err != nil || len(kids) != 1 {
			t.Fatalf("children after deleting one %+v, %v", kids, err)
		}
	})
}

package store

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// A session's facts are kept, replaced by key, refused when malformed or too big, and go
// with their session.
func TestSessionFacts(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		w := mustWorkspace(t, db, "/proj")
		s := mustSession(t, db, w.ID)
		other := mustSession(t, db, w.ID)

		if err := db.PutSessionFact(ctx, s.ID, "jean2.todos", json.RawMessage(`[{"content":"a"}]`)); err != nil {
			t.Fatal(err)
		}
		if err := db.PutSessionFact(ctx, s.ID, "jean2.todos", json.RawMessage(`[{"content":"b"}]`)); err != nil {
			t.Fatal(err)
		}
		if err := db.PutSessionFact(ctx, other.ID, "count", json.RawMessage(`3`)); err != nil {
			t.Fatal(err)
		}
		facts, err := db.SessionFacts(ctx, s.ID)
		if err != nil || len(facts) != 1 || string(facts["jean2.todos"]) != `[{"content":"b"}]` {
			t.Fatalf("facts: %v %s", err, facts)
		}
		for name, put := range map[string]func() error{
			"no session":   func() error { return db.PutSessionFact(ctx, "ses_gone", "k", json.RawMessage(`1`)) },
			"empty key":    func() error { return db.PutSessionFact(ctx, s.ID, "", json.RawMessage(`1`)) },
			"invalid JSON": func() error { return db.PutSessionFact(ctx, s.ID, "k", json.RawMessage(`{`)) },
			"too big": func() error {
				return db.PutSessionFact(ctx, s.ID, "k", json.RawMessage(`"`+strings.Repeat("x", MaxSessionFactBytes)+`"`))
			},
		} {
			err := put()
			if err == nil {
				t.Fatalf("%s: kept", name)
			}
			if name == "no session" && !errors.Is(err, ErrNotFound) {
				t.Fatalf("no session: %v", err)
			}
		}
		if err := db.DeleteSession(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
		if facts, err := db.SessionFacts(ctx, s.ID); err != nil || len(facts) != 0 {
			t.Fatalf("facts outlived their session: %v %s", err, facts)
		}
		if facts, _ := db.SessionFacts(ctx, other.ID); string(facts["count"]) != "3" {
			t.Fatalf("the other session's facts: %s", facts)
		}
	})
}

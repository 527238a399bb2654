package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jean2/jean2/store"
)

// Search finds sessions by the words of their messages (prefixes, case and accents
// ignored, every word required) and titles; the index follows messages as they are
// added, completed and deleted with their session; FTS5 syntax typed by a person is plain
// text.
func TestSearchAcrossSessions(t *testing.T) {
	store.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ws, err := db.CreateWorkspace(ctx, store.Workspace{Path: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		mk := func(title string, msgs ...string) store.Session {
			s, err := db.CreateSession(ctx, store.Session{WorkspaceID: ws.ID, Title: title})
			if err != nil {
				t.Fatal(err)
			}
			for i, m := range msgs {
				role := store.RoleUser
				if i%2 == 1 {
					role = store.RoleAssistant
				}
				if _, err := db.AppendMessage(ctx, store.Message{SessionID: s.ID, Role: role, Content: m}); err != nil {
					t.Fatal(err)
				}
			}
			return s
		}
		a := mk("Database work", "migrate the Postgres schema", "I changed schema.sql")
		b := mk("", "fix the login page", "The café menu is fixed")
		c := mk("Postgres tuning")
		ids := func(hits []store.SearchHit) string {
			var out []string
			for _, h := range hits {
				out = append(out, h.Session.ID)
			}
			return strings.Join(out, ",")
		}
		hits, err := db.Search(ctx, "postgres", "", 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(hits); !strings.Contains(got, a.ID) || !strings.Contains(got, c.ID) || strings.Contains(got, b.ID) {
			t.Fatalf("postgres: %s (a %s, b %s, c %s)", got, a.ID, b.ID, c.ID)
		}
		for _, h := range hits {
			if h.Session.ID == a.ID && (len(h.Matches) != 1 || !strings.Contains(h.Matches[0].Snippet, "\x02Postgres\x03") || h.Matches[0].Role != store.RoleUser) {
				t.Fatalf("a's matches %+v", h.Matches)
			}
		}
		if hits, _ = db.Search(ctx, "CAFE men", "", 0); ids(hits) != b.ID {
			t.Fatalf("accent-free prefix search: %s", ids(hits))
		}
		if hits, _ = db.Search(ctx, "login schema", "", 0); len(hits) != 0 {
			t.Fatalf("words in different sessions matched: %s", ids(hits))
		}
		for _, q := range []string{`"unbalanced`, `login OR`, `NEAR(`, `*`, `schema -x`} {
			if _, err := db.Search(ctx, q, "", 0); err != nil {
				t.Fatalf("search %q: %v", q, err)
			}
		}
		// A message whose content is completed later is found by its new text.
		m, err := db.AppendMessage(ctx, store.Message{SessionID: b.ID, Role: store.RoleAssistant, Status: store.StatusStreaming})
		if err != nil {
			t.Fatal(err)
		}
		m.Content, m.Status = "zebra crossing", store.StatusComplete
		if err := db.UpdateMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
		if hits, _ = db.Search(ctx, "zebra", "", 0); ids(hits) != b.ID {
			t.Fatalf("updated message: %s", ids(hits))
		}
		// Deleting a session takes its entries with it.
		if err := db.DeleteSession(ctx, b.ID); err != nil {
			t.Fatal(err)
		}
		if hits, _ = db.Search(ctx, "zebra", "", 0); len(hits) != 0 {
			t.Fatalf("deleted session found: %s", ids(hits))
		}
		if hits, _ = db.Search(ctx, "schema", "other-workspace", 0); len(hits) != 0 {
			t.Fatal("workspace filter ignored")
		}
	})
}

// Search keeps at most three matches per session, cuts the hits to limit, newest activity
// first, and takes a title's words literally: % and _ typed are not LIKE's wildcards.
func TestSearchLimitMatchCapAndTitleWildcards(t *testing.T) {
	store.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ws, err := db.CreateWorkspace(ctx, store.Workspace{Path: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		mk := func(title string, msgs ...string) store.Session {
			s, err := db.CreateSession(ctx, store.Session{WorkspaceID: ws.ID, Title: title})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range msgs {
				if _, err := db.AppendMessage(ctx, store.Message{SessionID: s.ID, Role: store.RoleUser, Content: m}); err != nil {
					t.Fatal(err)
				}
			}
			return s
		}
		many := mk("", "needle one", "needle two", "needle three", "needle four", "needle five")
		mk("", "a needle")
		mk("", "another needle")
		hits, err := db.Search(ctx, "needle", ws.ID, 0)
		if err != nil || len(hits) != 3 {
			t.Fatalf("needle: %d hits, %v", len(hits), err)
		}
		for i, h := range hits {
			if i > 0 && h.Session.UpdatedAt.After(hits[i-1].Session.UpdatedAt) {
				t.Fatalf("hit %d is newer than the one before it", i)
			}
			if h.Session.ID == many.ID && len(h.Matches) != 3 {
				t.Fatalf("a session with five matching messages has %d matches", len(h.Matches))
			}
		}
		if top, err := db.Search(ctx, "needle", ws.ID, 2); err != nil || len(top) != 2 || top[0].Session.ID != hits[0].Session.ID || top[1].Session.ID != hits[1].Session.ID {
			t.Fatalf("limit 2: %+v %v", top, err)
		}
		pct := mk("100% done")
		mk("1000 done")
		if hits, err = db.Search(ctx, "100%", ws.ID, 0); err != nil || len(hits) != 1 || hits[0].Session.ID != pct.ID || len(hits[0].Matches) != 0 {
			t.Fatalf("title 100%%: %+v %v", hits, err)
		}
	})
}

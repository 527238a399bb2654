package store

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
)

// Two instances (two handles on one database) adding allowed paths to one workspace at
// once, as two sessions of that workspace running on two instances do: every path is kept.
// (Attack: on Postgres at read committed each read the list before the other's commit and
// wrote it back with only its own path, losing the other's.)
func TestAllowedPathsAddedAtOnceFromTwoInstancesAreAllKept(t *testing.T) {
	forEachBackend(t, func(t *testing.T, a *DB) {
		ctx := context.Background()
		b := openAgain(t, a)
		w, err := a.CreateWorkspace(ctx, Workspace{Path: "/work/shared", Name: "shared"})
		if err != nil {
			t.Fatal(err)
		}
		const each = 20
		var wg sync.WaitGroup
		errs := make(chan error, 2*each)
		for i, db := range []*DB{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range each {
					if _, _, err := db.AddAllowedPath(ctx, w.ID, fmt.Sprintf("/data/%d/%d", i, j)); err != nil {
						errs <- err
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		got, err := b.Workspace(ctx, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			for j := range each {
				if p := fmt.Sprintf("/data/%d/%d", i, j); !slices.Contains(got.AllowedPaths, p) {
					t.Errorf("%s was lost (%d of %d kept)", p, len(got.AllowedPaths), 2*each)
				}
			}
		}
	})
}

// A session's messages are appended by the instance holding its lease only; should two
// instances append at once all the same (one that lost its lease and has not yet noticed),
// the seq taken as MAX(seq)+1 never numbers two messages alike: UNIQUE (session_id, seq)
// makes the later one fail, and what is stored is numbered 1..n without a gap.
func TestMessagesAppendedAtOnceFromTwoInstancesNeverShareASeq(t *testing.T) {
	forEachBackend(t, func(t *testing.T, a *DB) {
		ctx := context.Background()
		b := openAgain(t, a)
		w, err := a.CreateWorkspace(ctx, Workspace{Path: "/work/shared"})
		if err != nil {
			t.Fatal(err)
		}
		ses, err := a.CreateSession(ctx, Session{WorkspaceID: w.ID})
		if err != nil {
			t.Fatal(err)
		}
		const each = 15
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok := 0
		for _, db := range []*DB{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					if _, err := db.AppendMessage(ctx, Message{SessionID: ses.ID, Role: RoleUser, Content: "hi", Status: StatusComplete}); err == nil {
						mu.Lock()
						ok++
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		msgs, err := a.ListMessages(ctx, ses.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != ok || ok == 0 {
			t.Fatalf("%d appends succeeded, %d messages stored", ok, len(msgs))
		}
		t.Logf("%d of %d appends stored", ok, 2*each)
		for i, m := range msgs {
			if m.Seq != int64(i+1) {
				t.Fatalf("message %d has seq %d", i, m.Seq)
			}
		}
	})
}

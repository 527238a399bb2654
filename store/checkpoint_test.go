package store

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// appendBig commits n events of 3 KB to session sid, one commit each, and returns the
// largest size the log file reached (looked at every 16 commits).
func appendBig(t *testing.T, db *DB, sid string, n int) int64 {
	t.Helper()
	ctx := context.Background()
	payload := json.RawMessage(`{"text":"` + strings.Repeat("x", 3000) + `"}`)
	maxWAL := int64(0)
	for i := range n {
		if _, err := db.AppendEvents(ctx, sid, NewEvent{Type: "big", Payload: payload}); err != nil {
			t.Fatal(err)
		}
		if i%16 == 0 {
			if st, err := os.Stat(db.Path() + "-wal"); err == nil {
				maxWAL = max(maxWAL, st.Size())
			}
		}
	}
	return maxWAL
}

func countEvents(t *testing.T, db *DB, sid string) int {
	t.Helper()
	var n int
	if err := db.read.QueryRowContext(context.Background(), `SELECT count(*) FROM events WHERE session_id = ?`, sid).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A checkpointer that never gets to run (here: stopped; on a loaded machine: starved)
// does not let the log grow with the writes: past forceAfter commits the writer runs the
// checkpoint itself. Without that bound these 4000 commits make 90 MB of log.
func TestWriterBoundsTheLogWhenTheCheckpointerStalls(t *testing.T) {
	db := openTest(t)
	s := mustSession(t, db, mustWorkspace(t, db, "/c").ID)
	db.ckpt.close()
	maxWAL := appendBig(t, db, s.ID, 4000)
	t.Logf("the log grew to %d bytes at most; the writer checkpointed %d times", maxWAL, db.ckpt.forced.Load())
	// forceAfter commits of about 6 pages each: 6 MB between two checkpoints.
	if maxWAL > 10<<20 {
		t.Fatalf("the log grew to %d bytes", maxWAL)
	}
	if f := db.ckpt.forced.Load(); f < 4000/forceAfter-1 {
		t.Fatalf("the writer checkpointed %d times in 4000 commits", f)
	}
	if n := countEvents(t, db, s.ID); n != 4000 {
		t.Fatalf("%d events stored of 4000", n)
	}
}

// A reader that holds the log's old pages keeps the log from starting over, and a
// forced checkpoint from finishing: the writer tries once every forceAfter commits, each
// try bounded, and never stops writing, however many write at once; once the reader is gone, the next try settles
// the log.
func TestForcedCheckpointGivesWayToReaders(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	s := mustSession(t, db, mustWorkspace(t, db, "/c").ID)
	db.ckpt.close()
	appendBig(t, db, s.ID, 10)

	conn, err := db.read.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN`); err != nil {
		t.Fatal(err)
	}
	var seen int
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM events WHERE session_id = ?`, s.ID).Scan(&seen); err != nil || seen != 10 {
		t.Fatalf("the reader sees %d events (%v)", seen, err)
	}

	// Four writers at once: those that wait behind a failed try do not try again.
	const n = 2000
	payload := json.RawMessage(`{"text":"` + strings.Repeat("x", 3000) + `"}`)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for range n / 4 {
				if _, err := db.AppendEvents(ctx, s.ID, NewEvent{Type: "big", Payload: payload}); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	tries, forced := db.ckpt.tries.Load(), db.ckpt.forced.Load()
	t.Logf("with a reader on the log: %d tries, %d forced checkpoints", tries, forced)
	if forced != 0 {
		t.Fatalf("a RESTART checkpoint finished %d times while a reader held the log", forced)
	}
	if tries < n/forceAfter-1 || tries > n/forceAfter+1 {
		t.Fatalf("the writer tried %d checkpoints in %d commits, want one every %d", tries, n, forceAfter)
	}
	// The reader's snapshot stayed what it was.
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM events WHERE session_id = ?`, s.ID).Scan(&seen); err != nil || seen != 10 {
		t.Fatalf("the reader sees %d events (%v)", seen, err)
	}
	if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
		t.Fatal(err)
	}
	conn.Close()

	appendBig(t, db, s.ID, forceAfter+1)
	if db.ckpt.forced.Load() == 0 {
		t.Fatalf("no checkpoint finished after the reader left (%d tries)", db.ckpt.tries.Load())
	}
	if got := countEvents(t, db, s.ID); got != 10+n+forceAfter+1 {
		t.Fatalf("%d events stored of %d", got, 10+n+forceAfter+1)
	}
}

package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// A session's live messages are those after its newest compaction's upToSeq: a turn reads
// those, not the whole history.
func TestLiveMessagesStartAfterTheLastCompaction(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		ses := mustSession(t, db, mustWorkspace(t, db, t.TempDir()).ID)
		add := func(role Role, parts ...Part) Message {
			t.Helper()
			m, err := db.AppendMessage(ctx, Message{SessionID: ses.ID, Role: role, Status: StatusComplete, Content: "x", Parts: parts})
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		compaction := func(upTo int64) Part {
			args, _ := json.Marshal(CompactionInfo{UpToSeq: upTo, Messages: int(upTo)})
			return Part{Kind: PartCompaction, Status: StatusComplete, Text: fmt.Sprintf("summary up to %d", upTo), Args: string(args)}
		}
		for range 4 {
			add(RoleUser)
			add(RoleAssistant, Part{Kind: PartText, Text: "answer"})
		}
		live, err := db.LiveMessages(ctx, ses.ID)
		if err != nil || len(live) != 8 {
			t.Fatalf("never compacted: %d live messages (%v), want all 8", len(live), err)
		}
		add(RoleSystem, compaction(4)) // seq 9
		add(RoleSystem)                // a system message that is no compaction
		for range 3 {
			add(RoleUser)
		}
		add(RoleSystem, compaction(10)) // seq 14
		last := add(RoleUser)           // seq 15
		info, ok, err := db.LastCompaction(ctx, ses.ID)
		if err != nil || !ok || info.UpToSeq != 10 {
			t.Fatalf("LastCompaction = %+v, %v, %v; want upToSeq 10", info, ok, err)
		}
		live, err = db.LiveMessages(ctx, ses.ID)
		if err != nil {
			t.Fatal(err)
		}
		var seqs []int64
		for _, m := range live {
			seqs = append(seqs, m.Seq)
		}
		if fmt.Sprint(seqs) != "[11 12 13 14 15]" || live[3].Parts[0].Kind != PartCompaction || live[4].ID != last.ID {
			t.Fatalf("live messages %v, want [11 12 13 14 15] with the compaction at 14", seqs)
		}
	})
}

// The last compaction is found by walking the session's messages newest first through
// their key, stopping at the first: its cost is the messages since the last compaction,
// not the session's length. A plan that sorted the session's messages (a temporary
// b-tree, a Sort node) or scanned the table would read them all.
func TestLastCompactionWalksMessagesNewestFirst(t *testing.T) {
	ctx := context.Background()
	t.Run("sqlite", func(t *testing.T) {
		db := openTest(t)
		rows, err := db.read.QueryContext(ctx, `EXPLAIN QUERY PLAN `+lastCompactionQuery, "ses_x")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		s := strings.Join(plan, "; ")
		if !strings.Contains(s, "SEARCH m USING INDEX sqlite_autoindex_messages_2 (session_id=?)") || strings.Contains(s, "TEMP B-TREE") {
			t.Fatalf("the plan does not walk the session's messages in seq order: %s", s)
		}
	})
	t.Run("postgres", func(t *testing.T) {
		db := openPostgresTest(t)
		conn, err := db.read.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// An empty table is cheapest to scan; forbid it, as a long session's table would.
		if _, err := conn.ExecContext(ctx, `SET enable_seqscan = off`); err != nil {
			t.Fatal(err)
		}
		rows, err := conn.QueryContext(ctx, `EXPLAIN `+lastCompactionQuery, "ses_x")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		s := strings.Join(plan, "\n")
		if !strings.Contains(s, "Index Scan Backward using messages_session_id_seq_key on messages m") || strings.Contains(s, "Sort") {
			t.Fatalf("the plan does not walk the session's messages newest first:\n%s", s)
		}
	})
}

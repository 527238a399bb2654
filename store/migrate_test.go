package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/jean2/jean2/internal/pgtest"
)

// A database written before the image parts and the session counters (schema version 4)
// is brought up to date without losing anything: its parts keep their text and state (the
// table is rebuilt), an interrupted turn found in its event log becomes the session's open
// turn, and every event log goes on numbering where it stopped.
func TestMigrationsKeepAnOlderDatabase(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "old.db")
		raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)")
		if err != nil {
			t.Fatal(err)
		}
		testMigrationsKeepAnOlderDatabase(t, raw, dialectSQLite, func() (*DB, error) { return Open(context.Background(), path) })
	})
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.URL(t)
		raw, err := sql.Open("pgx", url)
		if err != nil {
			t.Fatal(err)
		}
		testMigrationsKeepAnOlderDatabase(t, raw, dialectPostgres, func() (*DB, error) { return OpenPostgres(context.Background(), url) })
	})
}

// testMigrationsKeepAnOlderDatabase writes a version-4 database through raw, then opens it
// with openOld.
func testMigrationsKeepAnOlderDatabase(t *testing.T, raw *sql.DB, d dialect, openOld func() (*DB, error)) {
	ctx := context.Background()
	ms, err := loadMigrations(d.migrationDir())
	if err != nil {
		t.Fatal(err)
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if d == dialectPostgres {
			q = rebind(q)
		}
		if _, err := raw.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if d == dialectPostgres {
		exec(`CREATE TABLE schema_migrations (version bigint PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)`)
	} else {
		exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`)
	}
	for _, m := range ms[:4] {
		exec(m.sql)
		exec(`INSERT INTO schema_migrations VALUES (?, ?, 1)`, m.version, m.name)
	}
	exec(`INSERT INTO workspaces (id, path, created_at, updated_at) VALUES ('ws_1', '/old', 1, 1)`)
	exec(`INSERT INTO sessions (id, workspace_id, created_at, updated_at) VALUES ('ses_open', 'ws_1', 1, 5), ('ses_done', 'ws_1', 1, 9)`)
	exec(`INSERT INTO messages (id, session_id, seq, role, content, status, created_at, updated_at) VALUES
		('msg_u', 'ses_open', 1, 'user', 'hi', 'complete', 2, 2), ('msg_a', 'ses_open', 2, 'assistant', 'half', 'complete', 3, 3)`)
	exec(`INSERT INTO parts (id, message_id, seq, kind, text, tool_name, call_id, args, status, created_at, updated_at) VALUES
		('prt_t', 'msg_a', 1, 'text', 'half', '', '', NULL, 'complete', 3, 3),
		('prt_c', 'msg_a', 2, 'tool_call', '', 'note', 'call_1', '{"a":1}', 'running', 3, 3)`)
	exec(`INSERT INTO events (session_id, seq, type, payload, created_at) VALUES
		('ses_open', 1, 'turn.started', '{"turnId":"turn_open","userMessageId":"msg_u"}', 2),
		('ses_open', 2, 'message.created', '{}', 3),
		('ses_done', 1, 'turn.started', '{"turnId":"turn_done","userMessageId":"x"}', 4),
		('ses_done', 2, 'turn.finished', '{"turnId":"turn_done"}', 5),
		('', 7, 'tools.changed', '{}', 6)`)
	exec(`INSERT INTO event_seqs VALUES ('ses_open', 2), ('ses_done', 2), ('', 7)`)
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}

	db, err := openOld()
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v, err := db.SchemaVersion(ctx); err != nil || v != len(ms) {
		t.Fatalf("schema version %d, %v", v, err)
	}
	msgs, err := db.ListMessages(ctx, "ses_open")
	if err != nil || len(msgs) != 2 || len(msgs[1].Parts) != 2 {
		t.Fatalf("messages after the migration: %+v, %v", msgs, err)
	}
	if p := msgs[1].Parts; p[0].Text != "half" || p[1].Args != `{"a":1}` || p[1].Status != StatusRunning || p[1].CallID != "call_1" {
		t.Fatalf("parts after the migration: %+v", p)
	}
	if un, err := db.UnfinishedMessages(ctx); err != nil || len(un) != 1 || un[0].ID != "msg_a" {
		t.Fatalf("unfinished after the migration: %+v, %v", un, err)
	}
	open, err := db.OpenTurns(ctx)
	if err != nil || len(open) != 1 || open[0] != (OpenTurn{SessionID: "ses_open", TurnID: "turn_open", UserMessageID: "msg_u", StartedAt: toTime(2)}) {
		t.Fatalf("open turns %+v, %v", open, err)
	}
	for sid, want := range map[string]int64{"ses_open": 2, "ses_done": 2, "": 7} {
		if last, err := db.LastEventSeq(ctx, sid); err != nil || last != want {
			t.Fatalf("LastEventSeq(%q) = %d, %v; want %d", sid, last, err, want)
		}
		evs, err := db.AppendEvents(ctx, sid, event("next"))
		if err != nil || evs[0].Seq != want+1 {
			t.Fatalf("next event of %q: %+v, %v", sid, evs, err)
		}
	}
	var kept int
	if err := db.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM event_seqs`).Scan(&kept); err != nil || kept != 1 {
		t.Fatalf("%d event_seqs rows (%v): only the server's log keeps one", kept, err)
	}
	if list, err := db.ListSessions(ctx, "ws_1"); err != nil || len(list) != 2 || list[0].ID != "ses_done" {
		t.Fatalf("sessions, most recently updated first: %+v, %v", list, err)
	}
}

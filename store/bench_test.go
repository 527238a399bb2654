package store

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// benchBackends runs fn as a sub-benchmark on each database (backends_test.go), each time
// with a fresh one.
func benchBackends(b *testing.B, fn func(b *testing.B, db *DB)) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) { fn(b, be.open(b)) })
	}
}

// BenchmarkAppendPartText measures one streamed text update (one commit) under SQLite's
// synchronous=FULL (DurabilityFull) and NORMAL (the default), and on PostgreSQL, for
// comparison.
func BenchmarkAppendPartText(b *testing.B) {
	for _, sync := range []string{"FULL", "NORMAL", "postgres"} {
		b.Run(sync, func(b *testing.B) {
			ctx := context.Background()
			var db *DB
			var err error
			if sync == "postgres" {
				db = openPostgresTest(b)
			} else if db, err = open(ctx, filepath.Join(b.TempDir(), "jean2.db"), options{synchronous: sync}); err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			s := mustSession(b, db, mustWorkspace(b, db, "/p").ID)
			m, err := db.AppendMessage(ctx, Message{SessionID: s.ID, Role: RoleAssistant, Status: StatusStreaming})
			if err != nil {
				b.Fatal(err)
			}
			p, err := db.AppendPart(ctx, Part{MessageID: m.ID, Kind: PartText, Status: StatusStreaming})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if err := db.AppendPartText(ctx, p.ID, "token "); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAppendMessage measures adding a message with two parts (one transaction).
func BenchmarkAppendMessage(b *testing.B) {
	benchBackends(b, func(b *testing.B, db *DB) {
		ctx := context.Background()
		s := mustSession(b, db, mustWorkspace(b, db, "/p").ID)
		for b.Loop() {
			if _, err := db.AppendMessage(ctx, Message{SessionID: s.ID, Role: RoleUser, Content: "hello",
				Parts: []Part{{Kind: PartText, Text: "hello"}, {Kind: PartToolCall, ToolName: "t", CallID: "c", Args: "{}"}}}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkListMessages measures loading a 200-message session with its parts.
func BenchmarkListMessages(b *testing.B) { benchBackends(b, benchListMessages) }

func benchListMessages(b *testing.B, db *DB) {
	ctx := context.Background()
	s := mustSession(b, db, mustWorkspace(b, db, "/p").ID)
	for range 200 {
		if _, err := db.AppendMessage(ctx, Message{SessionID: s.ID, Role: RoleUser, Content: "hello",
			Parts: []Part{{Kind: PartText, Text: "hello"}, {Kind: PartToolCall, ToolName: "t", CallID: "c", Args: "{}", Result: `{"success":true}`}}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if msgs, err := db.ListMessages(ctx, s.ID); err != nil || len(msgs) != 200 {
			b.Fatal(len(msgs), err)
		}
	}
}

// BenchmarkTurnWrites is what the harness stores for a turn of two rounds (a tool call,
// then a text answer), in the three batches it commits them in: the user's message with
// turn.started; the first answer with its call started; the call's outcome, the second
// answer, the ledger and turn.finished. One op is one turn, in a fresh session each time
// (made before the clock starts).
func BenchmarkTurnWrites(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		dir := b.TempDir()
		if d := os.Getenv("JEAN2_BENCH_DB_DIR"); d != "" {
			dir = d
		}
		db, err := Open(context.Background(), filepath.Join(dir, "turns.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		defer os.Remove(filepath.Join(dir, "turns.db"))
		benchTurnWrites(b, db)
	})
	b.Run("postgres", func(b *testing.B) { benchTurnWrites(b, openPostgresTest(b)) })
}

func benchTurnWrites(b *testing.B, db *DB) {
	ctx := context.Background()
	ws := mustWorkspace(b, db, "/p")
	ev := func(typ, payload string) NewEvent { return NewEvent{Type: typ, Payload: json.RawMessage(payload)} }
	turn := func(sessionID string) {
		var user Message
		err := db.Batch(ctx, func(tx *Tx) error {
			var err error
			if user, err = tx.AppendMessage(ctx, Message{ID: NewID("msg_"), SessionID: sessionID, Role: RoleUser, Content: "go"}); err != nil {
				return err
			}
			if err := tx.OpenTurn(ctx, OpenTurn{SessionID: sessionID, TurnID: "turn_1", UserMessageID: user.ID}); err != nil {
				return err
			}
			_, err = tx.AppendEvents(ctx, sessionID, ev("turn.started", `{"turnId":"turn_1"}`), ev("message.created", `{"message":{"id":"x","content":"go"}}`))
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		call := Part{ID: NewID("prt_"), Kind: PartToolCall, Status: StatusRunning, ToolName: "trivial", CallID: "call_1", Args: `{"n":1}`}
		err = db.Batch(ctx, func(tx *Tx) error {
			m, err := tx.AppendMessage(ctx, Message{ID: NewID("msg_"), SessionID: sessionID, Role: RoleAssistant, Status: StatusComplete,
				Finish: "tool_calls", TokensIn: 10, TokensOut: 5, Parts: []Part{call}})
			if err != nil {
				return err
			}
			call = m.Parts[0]
			_, err = tx.AppendEvents(ctx, sessionID, ev("message.created", `{"message":{"id":"y"}}`), ev("part.updated", `{"part":{"id":"z","status":"running"}}`))
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		err = db.Batch(ctx, func(tx *Tx) error {
			call.Status, call.Result = StatusComplete, `{"success":true,"result":{"ok":true}}`
			if err := tx.UpdatePart(ctx, call); err != nil {
				return err
			}
			m, err := tx.AppendMessage(ctx, Message{ID: NewID("msg_"), SessionID: sessionID, Role: RoleAssistant, Status: StatusComplete,
				Content: "ok", Finish: "stop", Parts: []Part{{ID: NewID("prt_"), Kind: PartText, Text: "ok"}}})
			if err != nil {
				return err
			}
			if _, err := tx.FileLedger(ctx, sessionID, m.ID, nil); err != nil {
				return err
			}
			if err := tx.CloseTurn(ctx, sessionID, "turn_1"); err != nil {
				return err
			}
			_, err = tx.AppendEvents(ctx, sessionID, ev("part.updated", `{"part":{"id":"z","status":"complete"}}`),
				ev("message.created", `{"message":{"id":"w","content":"ok"}}`), ev("turn.finished", `{"turnId":"turn_1","reason":"done"}`))
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	sessions := make([]string, b.N+20)
	for i := range sessions {
		sessions[i] = mustSession(b, db, ws.ID).ID
	}
	for _, s := range sessions[b.N:] {
		turn(s) // warm the caches
	}
	b.ResetTimer()
	for i := range b.N {
		turn(sessions[i])
	}
}

package store

import (
	"context"
	"path/filepath"
	"testing"
)

// BenchmarkAppendPartText measures one streamed text update (one commit) under the
// synchronous=FULL (DurabilityFull) and NORMAL (the default) for comparison.
func BenchmarkAppendPartText(b *testing.B) {
	for _, sync := range []string{"FULL", "NORMAL"} {
		b.Run(sync, func(b *testing.B) {
			ctx := context.Background()
			db, err := open(ctx, filepath.Join(b.TempDir(), "jean2.db"), options{synchronous: sync})
			if err != nil {
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
	ctx := context.Background()
	db := openTest(b)
	s := mustSession(b, db, mustWorkspace(b, db, "/p").ID)
	for b.Loop() {
		if _, err := db.AppendMessage(ctx, Message{SessionID: s.ID, Role: RoleUser, Content: "hello",
			Parts: []Part{{Kind: PartText, Text: "hello"}, {Kind: PartToolCall, ToolName: "t", CallID: "c", Args: "{}"}}}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListMessages measures loading a 200-message session with its parts.
func BenchmarkListMessages(b *testing.B) {
	ctx := context.Background()
	db := openTest(b)
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

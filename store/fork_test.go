package store

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// Forking copies a session's messages up to a point with their parts (images included)
// under new ids, refuses while one is still being written, and cutting a session drops its
// messages from a seq on; titles are set once unless a person named the session; the
// summary previews the last message and adds up tokens by model.
func TestForkCutTitleAndSummary(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		png := []byte("\x89PNG\r\n\x1a\n\x00\x01\xff")
		ws := mustWorkspace(t, db, "/f")
		src := mustSession(t, db, ws.ID)
		if _, err := db.AppendMessage(ctx, Message{SessionID: src.ID, Role: RoleUser, Content: "draw " + strings.Repeat("a", 200),
			Parts: []Part{{Kind: PartText, Text: "draw"}, {Kind: PartImage, MediaType: "image/png", Data: png}}}); err != nil {
			t.Fatal(err)
		}
		answer, err := db.AppendMessage(ctx, Message{SessionID: src.ID, Role: RoleAssistant, Content: "done", Provider: "openai", Model: "m1",
			TokensIn: 10, TokensOut: 3, Parts: []Part{{Kind: PartText, Text: "do"}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.UpdatePartText(ctx, answer.Parts[0].ID, "done"); err != nil {
			t.Fatal(err)
		}
		if err := db.UpdatePartText(ctx, "prt_nope", "x"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("UpdatePartText of a missing part: %v", err)
		}
		if _, err := db.AppendMessage(ctx, Message{SessionID: src.ID, Role: RoleAssistant, Content: "more", Provider: "openai", Model: "m1",
			TokensIn: 5, TokensOut: 2}); err != nil {
			t.Fatal(err)
		}

		fork, err := db.ForkSession(ctx, src.ID, answer.Seq, "the fork")
		if err != nil {
			t.Fatal(err)
		}
		msgs, err := db.ListMessages(ctx, fork.ID)
		if err != nil || len(msgs) != 2 {
			t.Fatalf("fork messages %+v, %v", msgs, err)
		}
		if msgs[0].ID == "" || msgs[0].Seq != 1 || len(msgs[0].Parts) != 2 || string(msgs[0].Parts[1].Data) != string(png) ||
			msgs[1].Parts[0].Text != "done" || msgs[1].ID == answer.ID || msgs[1].Parts[0].ID == answer.Parts[0].ID {
			t.Fatalf("fork copies: %+v", msgs)
		}
		if fork.Title != "the fork" || fork.Model != src.Model || fork.WorkspaceID != ws.ID {
			t.Fatalf("fork %+v", fork)
		}
		if _, err := db.AppendMessage(ctx, Message{SessionID: src.ID, Role: RoleAssistant, Status: StatusStreaming}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ForkSession(ctx, src.ID, 10, "x"); !errors.Is(err, ErrUnfinished) {
			t.Fatalf("fork over a streaming message: %v", err)
		}

		sum, err := db.Summary(ctx, src.ID)
		if err != nil || len(sum.Preview) != maxPreview || !strings.HasPrefix(sum.Preview, "draw a") ||
			len(sum.Usage) != 1 || sum.Usage[0] != (ModelUsage{Provider: "openai", Model: "m1", TokensIn: 15, TokensOut: 5}) {
			t.Fatalf("summary %+v, %v", sum, err)
		}

		n, err := db.DeleteMessagesFrom(ctx, src.ID, 2)
		if err != nil || n != 3 {
			t.Fatalf("cut: %d, %v", n, err)
		}
		if left, _ := db.ListMessages(ctx, src.ID); len(left) != 1 {
			t.Fatalf("after the cut: %+v", left)
		}

		untitled, err := db.CreateSession(ctx, Session{WorkspaceID: ws.ID})
		if err != nil {
			t.Fatal(err)
		}
		if s, set, err := db.SetTitleIfEmpty(ctx, untitled.ID, "first"); err != nil || !set || s.Title != "first" {
			t.Fatalf("SetTitleIfEmpty: %+v %v %v", s, set, err)
		}
		if s, set, err := db.SetTitleIfEmpty(ctx, untitled.ID, "second"); err != nil || set || s.Title != "first" {
			t.Fatalf("SetTitleIfEmpty over a title: %+v %v %v", s, set, err)
		}
	})
}

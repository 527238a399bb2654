package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jean2/jean2/store"
)

// BenchmarkSearch is GET /api/search's query over 200 sessions of 50 messages of about 400
// characters (10,000 messages, 4 MB of text), for a word found in 1 % of the messages.
func BenchmarkSearch(b *testing.B) {
	for _, name := range []string{"sqlite", "postgres"} {
		b.Run(name, func(b *testing.B) { benchSearch(b, store.OpenBackend(b, name)) })
	}
}

func benchSearch(b *testing.B, db *store.DB) {
	ctx := context.Background()
	ws, err := db.CreateWorkspace(ctx, store.Workspace{Path: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	words := strings.Fields("the agent reads files edits code runs tests and reports what changed in the workspace folder")
	for s := range 200 {
		ses, err := db.CreateSession(ctx, store.Session{WorkspaceID: ws.ID, Title: fmt.Sprintf("session %d", s)})
		if err != nil {
			b.Fatal(err)
		}
		for m := range 50 {
			var sb strings.Builder
			for i := 0; sb.Len() < 400; i++ {
				sb.WriteString(words[(s*7+m*3+i)%len(words)])
				sb.WriteByte(' ')
			}
			if (s*50+m)%100 == 0 {
				sb.WriteString("capacitor")
			}
			role := store.RoleUser
			if m%2 == 1 {
				role = store.RoleAssistant
			}
			if _, err := db.AppendMessage(ctx, store.Message{SessionID: ses.ID, Role: role, Content: sb.String()}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	for range b.N {
		hits, err := db.Search(ctx, "capacitor", "", 0)
		if err != nil || len(hits) != 50 {
			b.Fatalf("%d hits, %v", len(hits), err)
		}
	}
}

package ask

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/jean2/jean2/tool"
)

// A refused sensitive file is remembered for its session only, a lasting grant lifts it,
// the session's end forgets it, and a refused file that is not sensitive is not kept.
func TestRefusedSensitiveFiles(t *testing.T) {
	ws := t.TempDir()
	g := NewGrants(nil)
	call := Call{Tool: "read-file", SessionID: "s1", Workspace: ws}
	env, notes := filepath.Join(ws, ".env"), filepath.Join(ws, "notes.txt")
	g.Refuse(call, tool.Ask{Resource: "file", Paths: []string{".env"}})
	g.Refuse(call, tool.Ask{Resource: "file", Paths: []string{"notes.txt"}})
	g.Refuse(Call{Tool: "read-file", Workspace: ws}, tool.Ask{Resource: "file", Paths: []string{".env"}}) // no session
	if got := g.Refused("s1"); !slices.Equal(got, []string{env}) {
		t.Fatalf("refused in s1: %v (want %s, not %s)", got, env, notes)
	}
	if got := g.Refused("s2"); len(got) != 0 {
		t.Fatalf("refused in s2: %v", got)
	}
	grant := tool.CreateFilePermissionAsk(tool.FilePermission{Path: env, Operation: "read", IsSensitiveFile: true})
	if _, err := g.Record(context.Background(), call, grant, tool.DurationOnce); err != nil {
		t.Fatal(err)
	}
	if got := g.Refused("s1"); len(got) != 1 {
		t.Fatalf("a once grant lifted the refusal: %v", got)
	}
	if _, err := g.Record(context.Background(), call, grant, tool.DurationSession); err != nil {
		t.Fatal(err)
	}
	if got := g.Refused("s1"); len(got) != 0 {
		t.Fatalf("a session grant did not lift the refusal: %v", got)
	}
	g.Refuse(call, tool.Ask{Resource: "file", Paths: []string{".env"}})
	if err := g.EndSession(context.Background(), "s1"); err != nil {
		t.Fatal(err)
	}
	if got := g.Refused("s1"); len(got) != 0 {
		t.Fatalf("the ended session's refusals: %v", got)
	}
}

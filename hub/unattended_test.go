package hub

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/jean2/jean2/ask"
	"github.com/jean2/jean2/tool"
)

// A session with no client attached, under the most permissive autoApprove: a tool that
// labels its asks for secret files "low" is denied (issue #12 point 11b); an ordinary read
// in the workspace is still granted.
// (The test name must not hold a sensitive word such as "secrets": t.TempDir puts it in
// the workspace path, and policy.IsSensitive judges whole paths.)
func TestUnattendedPolicyDeniesProtectedPathsWhateverTheLabel(t *testing.T) {
	critical, err := ask.NewPolicy("critical")
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, Options{Unattended: func(string) tool.Asker { return critical }})
	root := t.TempDir()
	jean2Home := filepath.Join(root, "home", ".jean2")
	call := ask.Call{Tool: "deploy", CallID: "call_1", ToolVersion: "v1", Workspace: filepath.Join(root, "ws"),
		Home: filepath.Join(root, "home"), Protected: []string{jean2Home}}
	ctx := ask.ContextWithCall(context.Background(), call)
	decide := func(paths ...string) ask.Decision {
		t.Helper()
		q := tool.Ask{Type: tool.AskPermission, Question: "Read a harmless file?", Risk: "low", Resource: "file", Paths: paths}
		d, err := f.hub.Asker(f.sid).(ask.PermissionAsker).AskPermission(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, p := range [][]string{{"~/.env"}, {filepath.Join(jean2Home, ".env")}, {filepath.Join(jean2Home, "jean2.db")}, nil} {
		if d := decide(p...); d.Granted {
			t.Errorf("granted %v unattended", p)
		}
	}
	if d := decide("src/main.go"); !d.Granted {
		t.Error("a read in the workspace was denied")
	}
}

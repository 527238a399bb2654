package ask

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/jean2/jean2/tool"
)

// unattendedCall is a call whose workspace and home are real folders, with jean2's home
// and a credential folder protected, as the host makes it.
func unattendedCall(t *testing.T) (c Call, home, jean2Home string) {
	t.Helper()
	root := t.TempDir()
	home = filepath.Join(root, "home")
	jean2Home = filepath.Join(home, ".jean2")
	ws := filepath.Join(home, "project")
	for _, d := range []string{jean2Home, ws, filepath.Join(home, ".aws")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	c = Call{Tool: "t", ToolVersion: "v1", SessionID: "s1", Workspace: ws, Home: home,
		Protected: []string{jean2Home, filepath.Join(home, ".aws")}}
	return c, home, jean2Home
}

func brokerFor(asker tool.Asker, c Call) *Broker {
	return NewBroker(BrokerOptions{
		Asker: asker, Tool: c.Tool, ToolVersion: c.ToolVersion, CallID: c.CallID, SessionID: c.SessionID,
		WorkspaceID: c.WorkspaceID, Workspace: c.Workspace, Home: c.Home, Protected: c.Protected,
	})
}

// The attack of issue #12 point 11b: a tool labels its own permission ask "low" and an
// unattended policy (autoApprove high or critical) grants it. Sensitive files, jean2's
// home, credential folders and an ask that names no path (whose grant covers every file of
// the call) are never granted without a person, whatever the label and the level.
func TestPolicyNeverGrantsSensitiveOrProtectedUnattended(t *testing.T) {
	c, home, jean2Home := unattendedCall(t)
	asks := map[string]tool.Ask{
		"~/.env by tilde": {Type: tool.AskPermission, Question: "Read config?", Risk: "low", Resource: "file", Paths: []string{"~/.env"}},
		"~/.env absolute": {Type: tool.AskPermission, Question: "Read config?", Risk: "low", Resource: "file", Paths: []string{filepath.Join(home, ".env")}},
		"workspace .env":  {Type: tool.AskPermission, Question: "Read config?", Risk: "low", Resource: "file", Paths: []string{".env"}},
		"$JEAN2_HOME/.env": {Type: tool.AskPermission, Question: "Read settings?", Risk: "low", Resource: "file",
			Paths: []string{filepath.Join(jean2Home, ".env")}},
		"$JEAN2_HOME db by pattern": {Type: tool.AskPermission, Question: "Read data?", Risk: "low", Resource: "file",
			Patterns: []string{"file:" + filepath.Join(jean2Home, "jean2.db")}},
		"$JEAN2_HOME itself": {Type: tool.AskPermission, Question: "Read data?", Risk: "low", Resource: "file",
			Paths: []string{jean2Home}},
		"credential folder": {Type: tool.AskPermission, Question: "Read cloud config?", Risk: "low", Resource: "file",
			Paths: []string{"~/.aws/config"}},
		"no path at all":   {Type: tool.AskPermission, Question: "Read a file?", Risk: "low", Resource: "file"},
		"sensitive marker": tool.CreateFilePermissionAsk(tool.FilePermission{Path: "notes.txt", Operation: "read", Risk: "low", IsSensitiveFile: true}),
	}
	for _, level := range []string{"high", "critical"} {
		p, err := NewPolicy(level)
		if err != nil {
			t.Fatal(err)
		}
		for name, a := range asks {
			got, err := brokerFor(p, c).Ask(context.Background(), a)
			if err != nil {
				t.Fatalf("%s at %s: %v", name, level, err)
			}
			if string(got) != "false" {
				t.Errorf("autoApprove %s granted %s (labelled %q): %s", level, name, a.Risk, got)
			}
			// The policy alone, as the hub and the MCP server call it, decides the same.
			d, err := p.AskPermission(ContextWithCall(context.Background(), c), a)
			if err != nil || d.Granted {
				t.Errorf("Policy.AskPermission at %s granted %s: %+v %v", level, name, d, err)
			}
		}
	}
}

// The host assigns the risk from what is asked; the tool's label can only raise it. A read
// inside the workspace labelled "low" is low, a write there or a read outside it is medium,
// and a write outside it is high.
func TestAssessRaisesRisk(t *testing.T) {
	c, home, _ := unattendedCall(t)
	other := filepath.Join(filepath.Dir(home), "elsewhere", "data.txt")
	for _, tc := range []struct {
		name  string
		ask   tool.Ask
		risk  string
		human bool
	}{
		{"read in workspace", fileAsk("src/a.go", "read", "low"), "low", false},
		{"write in workspace", fileAsk("src/a.go", "write", "low"), "medium", false},
		{"read outside", fileAsk(other, "read", "low"), "medium", false},
		{"write outside", fileAsk(other, "write", "low"), "high", false},
		{"label raises", fileAsk("src/a.go", "read", "high"), "high", false},
		{"sensitive", fileAsk("src/.env", "read", "low"), "critical", true},
		{"not about files", tool.Ask{Type: tool.AskPermission, Question: "Deploy?", Risk: "medium"}, "medium", false},
		{"not about files, no label", tool.Ask{Type: tool.AskPermission, Question: "Deploy?"}, "critical", false},
	} {
		got := Assess(c, tc.ask)
		if got.Risk != tc.risk || got.PersonOnly != tc.human {
			t.Errorf("%s: %+v, want risk %s person-only %v", tc.name, got, tc.risk, tc.human)
		}
	}
	// What a policy at each level then grants of them.
	low, _ := NewPolicy("low")
	medium, _ := NewPolicy("medium")
	ctx := ContextWithCall(context.Background(), c)
	if d, _ := medium.AskPermission(ctx, fileAsk("src/a.go", "write", "low")); !d.Granted {
		t.Error("medium policy denied a write in the workspace")
	}
	if d, _ := low.AskPermission(ctx, fileAsk(other, "read", "low")); d.Granted {
		t.Error("low policy granted a read outside the workspace labelled low")
	}
	if d, _ := medium.AskPermission(ctx, fileAsk(other, "write", "low")); d.Granted {
		t.Error("medium policy granted a write outside the workspace labelled low")
	}
	// A person still sees the ask, with the host's risk.
	var seen tool.Ask
	asker := &fakeAsker{ask: func(a tool.Ask) (json.RawMessage, error) { seen = a; return json.RawMessage("true"), nil }}
	if got, err := brokerFor(asker, c).Ask(context.Background(), fileAsk("~/.env", "read", "low")); err != nil || string(got) != "true" {
		t.Fatalf("a person's yes: %s %v", got, err)
	}
	if seen.Risk != "critical" {
		t.Fatalf("the person saw risk %q for ~/.env", seen.Risk)
	}
}

package skills

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jean2/jean2/tool"
)

// callManage runs skill_manage in workspace ws with an asker that answers yes (and counts).
func callManage(t *testing.T, home, ws string, args string, asked *int) tool.Result {
	t.Helper()
	c := tool.NewContext(tool.Context{Workspace: ws, Asker: tool.AskerFunc(func(context.Context, tool.Ask) (json.RawMessage, error) {
		*asked++
		return json.RawMessage("true"), nil
	})})
	return ManageTool(home).Execute(context.Background(), c, json.RawMessage(args))
}

// skill_manage writes inside the skills folders only: a skill folder, or the workspace's
// .jean2, that is a link leading out of the workspace is refused and nothing is written
// where it leads; a SKILL.md that would not load is refused before anyone is asked.
func TestManageStaysInItsFolders(t *testing.T) {
	root := t.TempDir()
	home, ws, outside := filepath.Join(root, "home"), filepath.Join(root, "ws"), filepath.Join(root, "outside")
	put(t, filepath.Join(outside, "evil", FileName), "---\ndescription: planted\n---\n")
	put(t, filepath.Join(ws, ".jean2", "skills", "keep"), "")
	os.Remove(filepath.Join(ws, ".jean2", "skills", "keep"))
	if err := os.Symlink(filepath.Join(outside, "evil"), filepath.Join(ws, ".jean2", "skills", "evil")); err != nil {
		t.Fatal(err)
	}
	asked := 0
	r := callManage(t, home, ws, `{"action":"write_file","name":"evil","path":"payload.sh","content":"echo pwned"}`, &asked)
	if r.Success {
		t.Fatalf("wrote through a link out of the workspace: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(outside, "evil", "payload.sh")); !os.IsNotExist(err) {
		t.Fatalf("a file appeared where the link leads: %v", err)
	}

	ws2 := filepath.Join(root, "ws2")
	put(t, filepath.Join(ws2, "x"), "")
	if err := os.Symlink(outside, filepath.Join(ws2, ".jean2")); err != nil {
		t.Fatal(err)
	}
	r = callManage(t, home, ws2, `{"action":"create","name":"new-one","description":"d","body":"b"}`, &asked)
	if r.Success {
		t.Fatalf("created through a linked .jean2: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(outside, "skills", "new-one")); !os.IsNotExist(err) {
		t.Fatalf("a skill appeared where .jean2 leads: %v", err)
	}

	// A create, then an edit that would break the front matter: refused unasked.
	asked = 0
	if r := callManage(t, home, ws, `{"action":"create","name":"fine","description":"Does fine things.","body":"Step one."}`, &asked); !r.Success || asked != 1 {
		t.Fatalf("create: %+v, asked %d", r, asked)
	}
	if r := callManage(t, home, ws, `{"action":"edit","name":"fine","oldString":"---\n\nStep","newString":"Step"}`, &asked); r.Success || !strings.Contains(r.Error, "would not load") || asked != 1 {
		t.Fatalf("a breaking edit: %+v, asked %d", r, asked)
	}
	if r := callManage(t, home, ws, `{"action":"write_file","name":"fine","path":"../keep/x","content":"x"}`, &asked); r.Success {
		t.Fatalf("wrote outside the skill's folder with ..: %+v", r)
	}
	if r := callManage(t, home, ws, `{"action":"create","name":"Bad_Name","description":"d"}`, &asked); r.Success {
		t.Fatalf("created a skill with a bad name: %+v", r)
	}
	// In jean2's home when asked for.
	if r := callManage(t, home, ws, `{"action":"create","name":"everywhere","scope":"home","description":"For all.","body":"b"}`, &asked); !r.Success {
		t.Fatalf("home create: %+v", r)
	}
	if _, ok := Scan(home, "").Find("everywhere"); !ok {
		t.Fatal("the home skill is not found")
	}
}

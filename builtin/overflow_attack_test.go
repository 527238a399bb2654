package builtin_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/tool"
)

// TestReadFileAttackOtherSessionsOverflow: one session's results kept in its temporary
// folder (an overflow file, a pruned result) are that session's. A model in another
// session of the same workspace asks read-file, grep, glob and ls for them, with every
// permission ask answered yes (a person who clicks through, or an unattended policy at
// critical): nothing of them comes back — the folder lies in jean2's home, which is
// protected whatever the grants, and only the call's own session folder is opened in it.
// The attack failed before any change; this keeps it so.
func TestReadFileAttackOtherSessionsOverflow(t *testing.T) {
	e := newEnv(t)
	const secret = "session one's private tool output"
	kept, err := e.h.KeepResult("w1", "s1", "call_1", secret)
	if err != nil {
		t.Fatal(err)
	}
	e.asker.byType["permission"] = "true"
	in := func(name, args string) host.Outcome {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return e.h.Invoke(ctx, host.Call{Tool: name, Args: json.RawMessage(args), SessionID: "s2",
			Workspace: host.Workspace{ID: "w1", Path: e.ws}, Session: tool.NewSessionFacts(), Asker: e.asker})
	}
	dir := filepath.Dir(kept)
	q := func(v string) string { b, _ := json.Marshal(v); return string(b) }
	for _, c := range [][2]string{
		{"read-file", `{"path":` + q(kept) + `}`},
		{"read-file", `{"path":` + q(filepath.Join(dir, "..", "s2", "..", "s1", filepath.Base(kept))) + `}`},
		{"grep", `{"pattern":"private","path":` + q(filepath.Dir(dir)) + `}`},
		{"glob", `{"pattern":"**/*pruned*","path":` + q(filepath.Dir(dir)) + `}`},
		{"ls", `{"path":` + q(dir) + `}`},
	} {
		out := in(c[0], c[1])
		text := string(out.Result.Result) + out.ModelText
		if strings.Contains(text, "private tool output") || (out.Result.Success && strings.Contains(text, filepath.Base(kept))) {
			t.Errorf("%s %s in session s2 got session s1's file: %s", c[0], c[1], text)
		}
	}
	// Its own session reads it.
	out := e.call("read-file", `{"path":`+q(kept)+`}`)
	if !out.Result.Success || !strings.Contains(string(out.Result.Result), "private tool output") {
		t.Fatalf("session s1 reading its own kept result: %+v", out.Result)
	}
}

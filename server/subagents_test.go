package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/hub"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/undo"
)

// waitAbortTool waits until its call is stopped and writes down that it was.
const waitAbortTool = `import fs from 'node:fs';
export const definition = { name: 'wait_abort', description: 'Wait until stopped.', timeout: 60000,
  inputSchema: { type: 'object', properties: { marker: { type: 'string' } }, required: ['marker'] } };
export async function execute(input, ctx) {
  fs.writeFileSync(input.marker + '.started', 'yes');
  await new Promise((res) => {
    const t = setTimeout(res, 30000);
    ctx.abortSignal.addEventListener('abort', () => { clearTimeout(t); fs.writeFileSync(input.marker, 'aborted'); res(); });
  });
  return { success: false, error: 'stopped' };
}
`

// scripted is what a subagent test reads of a request: its session's first user message
// (the tests mark each session with it) and the tool results so far.
type scripted struct {
	user    string
	results []string
}

func readScripted(t testing.TB, r providertest.Request) scripted {
	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := r.Decode(&body); err != nil {
		t.Error(err)
	}
	var s scripted
	for _, m := range body.Messages {
		var text string
		_ = json.Unmarshal(m.Content, &text)
		switch {
		case m.Role == "user" && s.user == "":
			s.user = text
		case m.Role == "tool":
			s.results = append(s.results, text)
		}
	}
	return s
}

func toolCall(id, name string, args any) providertest.Reply {
	b, _ := json.Marshal(args)
	return providertest.OpenAIToolCall("test-model", id, name, string(b))
}

// A subagent over the API: the parent's task call starts a child listed under the parent;
// the child's ask reaches the person on the parent's socket, naming the child, and is
// answered through the parent's asks; the child writes a file; the parent gets the child's
// answer, counts the file in its "Changed", and a Restore of the parent's turn removes it.
func TestSubagentOverAPI(t *testing.T) {
	f := newFixture(t).start()
	_, ses := f.session()
	note := filepath.Join(f.ws, "child.txt")
	f.fake.Respond(func(r providertest.Request) providertest.Reply {
		s := readScripted(t, r)
		switch {
		case s.user == "PARENT" && len(s.results) == 0:
			return toolCall("call_task", "task", map[string]any{"description": "write the note", "prompt": "CHILD",
				"tools": []string{"confirm_it", "write_note"}})
		case s.user == "PARENT":
			return providertest.OpenAIText("test-model", "parent saw: "+s.results[0])
		case len(s.results) == 0:
			return toolCall("call_confirm", "confirm_it", map[string]any{"question": "May the child write?"})
		case len(s.results) == 1:
			return toolCall("call_write", "write_note", map[string]any{"path": "child.txt", "text": "hi"})
		}
		return providertest.OpenAIText("test-model", "CHILD-DONE")
	})
	sock := f.dial("/api/sessions/"+ses.ID+"/ws?after=0", nil)
	var started struct {
		Turn struct{ ID, UserMessageID string }
	}
	f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "PARENT"}, 202, &started)

	ev, before := sock.until(hub.EventAskPending, 60*time.Second)
	var p hub.AskPendingPayload
	mustJSON(t, ev.Payload, &p)
	var kids struct{ Sessions []sessionView }
	f.call("GET", "/api/sessions/"+ses.ID+"/children", nil, 200, &kids)
	if len(kids.Sessions) != 1 || kids.Sessions[0].Parent == nil || kids.Sessions[0].Parent.ParentSessionID != ses.ID ||
		kids.Sessions[0].Parent.ParentCallID != "call_task" || kids.Sessions[0].Title != "write the note" {
		t.Fatalf("children = %+v", kids)
	}
	child := kids.Sessions[0].ID
	if p.Ask.FromSessionID != child || p.Ask.SessionID != ses.ID {
		t.Fatalf("ask.pending = %s, want it in %s from %s", ev.Payload, ses.ID, child)
	}
	if !strings.Contains(types(before), "subagent.started") {
		t.Errorf("the parent's socket saw %s, no subagent.started", types(before))
	}
	f.call("POST", "/api/sessions/"+ses.ID+"/asks/"+p.Ask.ID, map[string]any{"answer": true}, 200, nil)

	fin, _ := sock.until("turn.finished", 60*time.Second)
	var finished struct {
		Reason  string
		Changed struct{ Files int }
	}
	mustJSON(t, fin.Payload, &finished)
	if finished.Reason != "done" || finished.Changed.Files != 1 {
		t.Fatalf("the parent's turn.finished = %s", fin.Payload)
	}
	var msgs struct{ Messages []store.Message }
	f.call("GET", "/api/sessions/"+ses.ID+"/messages", nil, 200, &msgs)
	if last := msgs.Messages[len(msgs.Messages)-1]; !strings.Contains(last.Content, "CHILD-DONE") {
		t.Fatalf("the parent's answer %q lacks the child's", last.Content)
	}
	var view sessionView
	f.call("GET", "/api/sessions/"+child, nil, 200, &view)
	if view.Parent == nil || view.Parent.ParentSessionID != ses.ID {
		t.Fatalf("GET the child = %+v", view)
	}
	var done struct{ Report undo.Report }
	f.call("POST", "/api/sessions/"+ses.ID+"/restore", map[string]any{"messageId": started.Turn.UserMessageID}, 200, &done)
	if _, err := os.Stat(note); !done.Report.Applied || !os.IsNotExist(err) {
		t.Fatalf("restore of the parent's turn = %+v; the child's file: %v", done.Report, err)
	}
}

// Stop of the parent over the API stops the child's call and turn.
func TestSubagentStopOverAPI(t *testing.T) {
	f := newFixture(t)
	f.tools["wait-abort"] = waitAbortTool
	f.start()
	_, ses := f.session()
	marker := filepath.Join(f.root, "wait")
	f.fake.Respond(func(r providertest.Request) providertest.Reply {
		s := readScripted(t, r)
		switch {
		case s.user == "PARENT" && len(s.results) == 0:
			return toolCall("call_task", "task", map[string]any{"prompt": "CHILD"})
		case len(s.results) == 0:
			return toolCall("call_wait", "wait_abort", map[string]any{"marker": marker})
		}
		return providertest.OpenAIText("test-model", "went on")
	})
	sock := f.dial("/api/sessions/"+ses.ID+"/ws?after=0", nil)
	f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "PARENT"}, 202, nil)
	deadline := time.Now().Add(60 * time.Second)
	for _, err := os.Stat(marker + ".started"); err != nil; _, err = os.Stat(marker + ".started") {
		if time.Now().After(deadline) {
			t.Fatal("the child's call never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	f.call("POST", "/api/sessions/"+ses.ID+"/stop", nil, 200, nil)
	fin, _ := sock.until("turn.finished", 30*time.Second)
	var finished struct{ Reason string }
	mustJSON(t, fin.Payload, &finished)
	if finished.Reason != "stopped" {
		t.Fatalf("the parent's turn.finished = %s", fin.Payload)
	}
	var kids struct{ Sessions []sessionView }
	f.call("GET", "/api/sessions/"+ses.ID+"/children", nil, 200, &kids)
	if len(kids.Sessions) != 1 || kids.Sessions[0].Running {
		t.Fatalf("children after the stop = %+v", kids)
	}
	if b, _ := os.ReadFile(marker); string(b) != "aborted" {
		t.Fatalf("the child's call was not stopped: %q", b)
	}
}

package server

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/store"
)

// countTool reports progress n times, 30 ms apart.
const countTool = `export const definition = {
  name: 'count_up', description: 'Count with progress.',
  inputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
};
export async function execute(input, ctx) {
  for (let i = 1; i <= input.n; i++) {
    ctx.progress({ message: 'step ' + i, current: i, total: input.n });
    await new Promise((r) => setTimeout(r, 30));
  }
  return { success: true, result: { counted: input.n } };
}
`

// A tool run or a restore in flight keeps its session and workspace from being deleted;
// once it ends they can be.
func TestDeleteRefusedWhileToolRunsInSession(t *testing.T) {
	f := newFixture(t).start()
	ws, ses := f.session()
	sock := f.dial("/api/sessions/"+ses.ID+"/ws", nil) // attached: the ask waits for an answer

	type result struct {
		status int
		body   []byte
	}
	ran := make(chan result, 1)
	go func() {
		status, body := f.request("POST", "/api/tools/confirm_it/run",
			map[string]any{"args": map[string]any{"question": "go?"}, "sessionId": ses.ID}, nil)
		ran <- result{status, body}
	}()
	pending, _ := sock.until("ask.pending", 60*time.Second)
	var p struct{ Ask struct{ ID string } }
	mustJSON(t, pending.Payload, &p)

	if code := errorCode(t, f.call("DELETE", "/api/sessions/"+ses.ID, nil, 409, nil)); code != codeBusy {
		t.Errorf("delete of a session running a tool: %s", code)
	}
	if code := errorCode(t, f.call("DELETE", "/api/workspaces/"+ws.ID, nil, 409, nil)); code != codeBusy {
		t.Errorf("delete of a workspace running a tool: %s", code)
	}
	f.call("POST", "/api/sessions/"+ses.ID+"/asks/"+p.Ask.ID, map[string]any{"answer": true}, 200, nil)
	r := <-ran
	if r.status != 200 || !strings.Contains(string(r.body), `"confirmed":true`) {
		t.Fatalf("run: %d %s", r.status, r.body)
	}
	f.call("DELETE", "/api/sessions/"+ses.ID, nil, 204, nil)
	f.call("DELETE", "/api/workspaces/"+ws.ID, nil, 204, nil)
}

// A turn started while the session is being deleted either started first (the delete is
// refused as busy) or finds the session gone (404): never both a started turn and a
// deleted session.
func TestDeleteAndTurnStartAreAtomic(t *testing.T) {
	f := newFixture(t)
	f.tools = nil
	f.start()
	// Each answer takes a while, so a turn that started is still running when the delete
	// runs.
	f.fake.Respond(func(providertest.Request) providertest.Reply {
		return providertest.NewOpenAIStream("test-model").Pause(500 * time.Millisecond).Text("late").Finish("stop").Done().Reply()
	})
	ws, _ := f.session()
	outcomes := map[string]int{}
	for i := range 12 {
		var ses sessionView
		f.call("POST", "/api/workspaces/"+ws.ID+"/sessions", map[string]any{}, 201, &ses)
		var wg sync.WaitGroup
		var turnStatus, delStatus int
		var turnBody, delBody []byte
		wg.Add(2)
		go func() {
			defer wg.Done()
			turnStatus, turnBody = f.request("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "hi"}, nil)
		}()
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				time.Sleep(time.Duration(i) * time.Millisecond)
			}
			delStatus, delBody = f.request("DELETE", "/api/sessions/"+ses.ID, nil, nil)
		}()
		wg.Wait()
		switch {
		case turnStatus == 202 && delStatus == 409:
			f.call("POST", "/api/sessions/"+ses.ID+"/stop", map[string]any{}, 200, nil)
			waitIdle(t, f, ses.ID)
			f.call("DELETE", "/api/sessions/"+ses.ID, nil, 204, nil)
		case turnStatus == 404 && delStatus == 204:
		default:
			t.Fatalf("round %d: turn %d %s, delete %d %s", i, turnStatus, turnBody, delStatus, delBody)
		}
		outcomes[string(rune('0'+turnStatus/100))]++
	}
	t.Logf("outcomes by the turn's status class: %v", outcomes)
	// Nothing of a deleted session is left behind.
	var all struct{ Sessions []sessionView }
	f.call("GET", "/api/sessions", nil, 200, &all)
	if len(all.Sessions) != 1 {
		t.Errorf("%d sessions left, want the fixture's one", len(all.Sessions))
	}
}

// waitIdle waits until the session runs no turn.
func waitIdle(t *testing.T, f *fixture, sessionID string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for f.srv.harness.Running(sessionID) {
		if time.Now().After(deadline) {
			t.Fatalf("session %s still runs a turn", sessionID)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A tool run's progress streams as tool.run.progress events on the session named in the
// run (or the server's log without one), the latest report last, then tool.run.finished;
// the outcome carries durationMs.
func TestToolRunProgressStreamed(t *testing.T) {
	f := newFixture(t)
	f.tools = map[string]string{"count-up": countTool}
	f.start()
	ws, ses := f.session()

	for _, onSession := range []bool{true, false} {
		path, body := "/api/ws", map[string]any{"args": map[string]any{"n": 6}, "workspaceId": ws.ID, "ref": "mine"}
		if onSession {
			path = "/api/sessions/" + ses.ID + "/ws"
			body["sessionId"] = ses.ID
		}
		sock := f.dial(path, nil)
		var out struct {
			CallID     string
			Duration   int64
			DurationMs int64
			Result     struct{ Success bool }
		}
		f.call("POST", "/api/tools/count_up/run", body, 200, &out)
		if !out.Result.Success || out.CallID == "" || out.DurationMs < 150 || out.DurationMs != (out.Duration+500_000)/1_000_000 {
			t.Fatalf("outcome = %+v: want success, a callId, durationMs = duration in ms (≥ 150)", out)
		}
		fin, before := sock.until(EventRunFinished, 30*time.Second)
		var progress []runProgressPayload
		for _, ev := range before {
			if ev.Type == EventRunProgress {
				var p runProgressPayload
				mustJSON(t, ev.Payload, &p)
				progress = append(progress, p)
			}
		}
		if len(progress) == 0 || len(progress) > 6 {
			t.Fatalf("on %s: %d progress events (%s), want 1…6", path, len(progress), types(before))
		}
		last := progress[len(progress)-1]
		if last.CallID != out.CallID || last.Ref != "mine" || last.Tool != "count_up" || last.Progress.Current != 6 || last.Progress.Message != "step 6" {
			t.Errorf("on %s: last progress = %+v, want step 6 of call %s", path, last, out.CallID)
		}
		var end runFinishedPayload
		mustJSON(t, fin.Payload, &end)
		if end.CallID != out.CallID || !end.Success || end.DurationMs != out.DurationMs || end.Ref != "mine" {
			t.Errorf("on %s: tool.run.finished = %s, outcome %+v", path, fin.Payload, out)
		}
		sock.close()
	}
	status, body := f.request("POST", "/api/tools/count_up/run", map[string]any{"args": map[string]any{"n": 1}, "workspaceId": ws.ID, "ref": strings.Repeat("x", 200)}, nil)
	if status != 400 {
		t.Errorf("a 200-byte ref: %d %s", status, body)
	}
}

// Parts carry durationMs beside duration (ns) in the messages and in the events, and the
// messages come with the lastSeq to subscribe after.
func TestPartDurationInMillisecondsAndMessagesLastSeq(t *testing.T) {
	f := newFixture(t)
	f.tools = map[string]string{"count-up": countTool}
	f.start()
	_, ses := f.session()
	f.fake.Push(
		providertest.OpenAIToolCall("test-model", "call_1", "count_up", `{"n":4}`),
		providertest.OpenAIText("test-model", "counted"),
	)
	sock := f.dial("/api/sessions/"+ses.ID+"/ws", nil)
	f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "count"}, 202, nil)
	fin, before := sock.until("turn.finished", 60*time.Second)

	checkPart := func(where string, raw json.RawMessage) {
		t.Helper()
		var p struct {
			Kind, Status string
			Duration     *int64
			DurationMs   *int64
		}
		mustJSON(t, raw, &p)
		if p.Duration == nil || p.DurationMs == nil || *p.DurationMs != (*p.Duration+500_000)/1_000_000 {
			t.Errorf("%s: part %s: durationMs must be duration (ns) in ms", where, raw)
		}
		if p.Kind == "tool_call" && p.Status == "complete" && *p.DurationMs < 100 {
			t.Errorf("%s: a call of 4×30 ms took %d ms: %s", where, *p.DurationMs, raw)
		}
	}
	completed := 0
	for _, ev := range before {
		if ev.Type == "part.updated" {
			var pl struct{ Part json.RawMessage }
			mustJSON(t, ev.Payload, &pl)
			checkPart("part.updated on the socket", pl.Part)
			if strings.Contains(string(pl.Part), `"complete"`) {
				completed++
			}
		}
	}
	if completed == 0 {
		t.Fatalf("no part.updated with the call complete among %s", types(before))
	}
	var polled struct{ Events []event }
	f.call("GET", "/api/sessions/"+ses.ID+"/events", nil, 200, &polled)
	for _, ev := range polled.Events {
		if ev.Type == "part.updated" {
			var pl struct{ Part json.RawMessage }
			mustJSON(t, ev.Payload, &pl)
			checkPart("part.updated polled", pl.Part)
		}
	}
	var msgs struct {
		Messages []struct {
			Role  string
			Parts []json.RawMessage
		}
		LastSeq *int64
	}
	f.call("GET", "/api/sessions/"+ses.ID+"/messages", nil, 200, &msgs)
	if msgs.LastSeq == nil || *msgs.LastSeq != fin.Seq {
		t.Errorf("messages' lastSeq = %v, want %d (turn.finished)", msgs.LastSeq, fin.Seq)
	}
	calls := 0
	for _, m := range msgs.Messages {
		for _, p := range m.Parts {
			checkPart("GET messages", p)
			if strings.Contains(string(p), `"tool_call"`) {
				calls++
			}
		}
	}
	if calls != 1 {
		t.Errorf("%d tool calls among the messages, want 1", calls)
	}
	// The store's own type still reads the nanoseconds (jean2 chat decodes it).
	var typed struct{ Messages []store.Message }
	f.call("GET", "/api/sessions/"+ses.ID+"/messages", nil, 200, &typed)
	for _, m := range typed.Messages {
		for _, p := range m.Parts {
			if p.Kind == store.PartToolCall && p.Duration < 100*time.Millisecond {
				t.Errorf("store.Part decoded from the API: duration %v", p.Duration)
			}
		}
	}
}

// Deleting a session, or its workspace, closes the session's sockets with 4004; a socket
// opened afterwards gets 404.
func TestDeletedSessionSocketsClosed(t *testing.T) {
	f := newFixture(t)
	f.tools = nil
	f.start()
	ws, first := f.session()
	_, second := f.session()
	closedWith := func(s *socket) websocket.StatusCode {
		t.Helper()
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			t.Fatal("the socket stayed open")
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		return websocket.CloseStatus(s.closeBy)
	}
	a, b := f.dial("/api/sessions/"+first.ID+"/ws", nil), f.dial("/api/sessions/"+second.ID+"/ws", nil)
	server := f.dial("/api/ws", nil)
	f.call("DELETE", "/api/sessions/"+first.ID, nil, 204, nil)
	if got := closedWith(a); got != CloseSessionDeleted {
		t.Errorf("socket of the deleted session closed with %d, want %d", got, CloseSessionDeleted)
	}
	f.call("DELETE", "/api/workspaces/"+ws.ID, nil, 204, nil)
	if got := closedWith(b); got != CloseSessionDeleted {
		t.Errorf("socket of a session of the deleted workspace closed with %d, want %d", got, CloseSessionDeleted)
	}
	select {
	case <-server.done:
		t.Error("the server log's socket closed with the sessions")
	case <-time.After(100 * time.Millisecond):
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, resp, err := websocket.Dial(ctx, f.wsURL("/api/sessions/"+first.ID+"/ws"), &websocket.DialOptions{HTTPHeader: f.authHeader()}); err == nil || resp == nil || resp.StatusCode != 404 {
		t.Errorf("a socket to the deleted session: %v %v", err, resp)
	}
}

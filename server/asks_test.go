package server

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/ask"
	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/hub"
	"github.com/jean2/jean2/provider/providertest"
)

// An ask of a turn's tool reaches a WebSocket client; the client goes away and another
// connects after the last event it saw: the pending ask is in its hello (and listed), and
// its answer resumes the call.
func TestAskAnsweredOverWebSocketSurvivesReconnect(t *testing.T) {
	f := newFixture(t).start()
	_, ses := f.session()
	f.fake.Push(
		providertest.OpenAIToolCall("test-model", "call_ask", "confirm_it", `{"question":"Ship it?"}`),
		providertest.OpenAIText("test-model", "ok"),
	)
	first := f.dial("/api/sessions/"+ses.ID+"/ws", nil)
	f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "ask me"}, 202, nil)
	pending, _ := first.until("ask.pending", 60*time.Second)
	var p hub.AskPendingPayload
	mustJSON(t, pending.Payload, &p)
	if p.Ask.Ask.Question != "Ship it?" || p.Ask.Tool != "confirm_it" || p.Ask.SessionID != ses.ID {
		t.Fatalf("ask.pending = %s", pending.Payload)
	}
	first.close()

	// A page reload: a new socket after the last seq seen.
	second := f.dial(fmt.Sprintf("/api/sessions/%s/ws?after=%d", ses.ID, pending.Seq), nil)
	if len(second.hello.PendingAsks) != 1 || second.hello.PendingAsks[0].ID != p.Ask.ID || !second.hello.Running {
		t.Fatalf("hello after reconnect = %+v", second.hello)
	}
	var listed struct{ Asks []hub.PendingAsk }
	f.call("GET", "/api/sessions/"+ses.ID+"/asks", nil, 200, &listed)
	if len(listed.Asks) != 1 || listed.Asks[0].ID != p.Ask.ID {
		t.Fatalf("listed asks = %+v", listed)
	}
	// A wrong shape is refused and the ask stays pending; then the right answer wins.
	second.send(map[string]any{"type": "answer", "askId": p.Ask.ID, "answer": "yes please", "ref": "r1"})
	reply, _ := second.until("error", 10*time.Second)
	if reply.Ref != "r1" || reply.Error == nil || reply.Error.Code != codeInvalidAnswer {
		t.Fatalf("reply to a wrong answer = %+v", reply)
	}
	second.send(map[string]any{"type": "answer", "askId": p.Ask.ID, "answer": true, "ref": "r2"})
	// The ack and ask.resolved come in either order (the hub publishes before the ack).
	got := second.collect(10*time.Second, "ack", "ask.resolved")
	ack, resolved := got["ack"], got["ask.resolved"]
	if ack.Ref != "r2" {
		t.Fatalf("ack = %+v", ack)
	}
	var res hub.AskResolvedPayload
	mustJSON(t, resolved.Payload, &res)
	if res.Outcome != hub.OutcomeAnswered || string(res.Answer) != "true" {
		t.Fatalf("ask.resolved = %s", resolved.Payload)
	}
	fin, _ := second.until("turn.finished", 60*time.Second)
	var finished struct{ Reason string }
	mustJSON(t, fin.Payload, &finished)
	if finished.Reason != "done" {
		t.Fatalf("turn.finished = %s", fin.Payload)
	}
	// The model got the answer as the tool's result.
	reqs := f.fake.Requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), `confirmed`) || !strings.Contains(string(reqs[1].Body), `true`) {
		t.Fatalf("the model did not get the confirmed result: %d requests", len(reqs))
	}
	// Answered once: a second answer is a 404.
	body := f.call("POST", "/api/sessions/"+ses.ID+"/asks/"+p.Ask.ID, map[string]any{"answer": false}, 404, nil)
	if code := errorCode(t, body); code != codeNotFound {
		t.Errorf("second answer: %s", code)
	}
}

// A permission granted for the session is remembered, listed and revocable; a tool run
// through the API asks the session's clients.
func TestGrantsListedAndRevoked(t *testing.T) {
	f := newFixture(t).start()
	ws, ses := f.session()
	sock := f.dial("/api/sessions/"+ses.ID+"/ws", nil)

	run := func() chan host.Outcome {
		done := make(chan host.Outcome, 1)
		go func() {
			var out host.Outcome
			status, data := f.request("POST", "/api/tools/permit_it/run", map[string]any{"args": map[string]any{}, "sessionId": ses.ID}, nil)
			if status != 200 || json.Unmarshal(data, &out) != nil {
				t.Errorf("run permit_it: %d %s", status, data)
			}
			done <- out
		}()
		return done
	}
	done := run()
	pending, _ := sock.until("ask.pending", 60*time.Second)
	var p hub.AskPendingPayload
	mustJSON(t, pending.Payload, &p)
	if p.Ask.Ask.Type != "permission" {
		t.Fatalf("ask = %s", pending.Payload)
	}
	if code := errorCode(t, f.call("POST", "/api/sessions/"+ses.ID+"/asks/"+p.Ask.ID, map[string]any{"answer": map[string]any{"granted": true, "duration": "forever"}}, 422, nil)); code != codeInvalidAnswer {
		t.Fatalf("a wrong duration: %s", code)
	}
	f.call("POST", "/api/sessions/"+ses.ID+"/asks/"+p.Ask.ID, map[string]any{"answer": map[string]any{"granted": true, "duration": "session"}}, 200, nil)
	out := <-done
	if !out.Result.Success || !strings.Contains(string(out.Result.Result), `"granted":true`) {
		t.Fatalf("outcome = %+v", out)
	}

	var grants struct{ Grants []ask.Grant }
	f.call("GET", "/api/grants?sessionId="+ses.ID, nil, 200, &grants)
	if len(grants.Grants) != 1 || grants.Grants[0].Tool != "permit_it" || grants.Grants[0].Duration != "session" {
		t.Fatalf("grants = %+v", grants)
	}
	f.call("GET", "/api/grants?workspaceId=nope", nil, 200, &grants)
	if len(grants.Grants) != 0 {
		t.Fatalf("grants of another workspace = %+v", grants)
	}
	// Remembered: the second run asks no one.
	done = run()
	select {
	case out := <-done:
		if !out.Result.Success || !strings.Contains(string(out.Result.Result), `"granted":true`) {
			t.Fatalf("second run = %+v", out)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the second run waits: the grant was not remembered")
	}

	f.call("GET", "/api/grants", nil, 200, &grants)
	id := grants.Grants[0].ID
	f.call("DELETE", "/api/grants/"+id, nil, 204, nil)
	f.call("DELETE", "/api/grants/"+id, nil, 404, nil)
	f.call("GET", "/api/grants", nil, 200, &grants)
	if len(grants.Grants) != 0 {
		t.Fatalf("grants after revoking = %+v", grants)
	}
	// Revoked: the next run asks again; it is denied over the socket.
	done = run()
	again, _ := sock.until("ask.pending", 60*time.Second)
	mustJSON(t, again.Payload, &p)
	sock.send(map[string]any{"type": "answer", "askId": p.Ask.ID, "answer": false})
	if out := <-done; !strings.Contains(string(out.Result.Result), `"granted":false`) {
		t.Fatalf("denied run = %+v", out)
	}
	_ = ws
}

// With no client attached, the unattended policy decides: deny by default, grant up to
// the configured risk once set.
func TestUnattendedPolicyFromSettings(t *testing.T) {
	f := newFixture(t).start()
	ws, _ := f.session()
	runPermit := func(risk string) string {
		var out host.Outcome
		f.call("POST", "/api/tools/permit_it/run", map[string]any{"args": map[string]any{"risk": risk}, "workspaceId": ws.ID}, 200, &out)
		if !out.Result.Success {
			t.Fatalf("run permit_it: %+v", out)
		}
		return string(out.Result.Result)
	}
	if got := runPermit("low"); !strings.Contains(got, `"granted":false`) {
		t.Fatalf("default policy granted: %s", got)
	}
	var st settingsAnswer
	f.call("PATCH", "/api/settings", map[string]any{"autoApprove": "medium"}, 200, &st)
	if st.AutoApprove != "medium" || st.WorkRounds != 5 {
		t.Fatalf("settings = %+v", st)
	}
	if got := runPermit("low"); !strings.Contains(got, `"granted":true`) {
		t.Fatalf("low risk under medium: %s", got)
	}
	if got := runPermit("high"); !strings.Contains(got, `"granted":false`) {
		t.Fatalf("high risk under medium: %s", got)
	}
	for _, bad := range []map[string]any{{"autoApprove": "everything"}, {"askTimeoutSeconds": 1}, {"workRounds": 30, "maxRounds": 10}, {"nope": 1}} {
		if code := errorCode(t, f.call("PATCH", "/api/settings", bad, 400, nil)); code != codeBadRequest {
			t.Errorf("PATCH settings %v: %s", bad, code)
		}
	}
	// Kept across a restart.
	f.stop()
	f.start()
	f.call("GET", "/api/settings", nil, 200, &st)
	if st.AutoApprove != "medium" {
		t.Fatalf("settings after restart = %+v", st)
	}
}

// The ask timeout set through the API applies to the next ask without a restart.
func TestAskTimeoutSettingAppliesLive(t *testing.T) {
	f := newFixture(t).start()
	_, ses := f.session()
	var st settingsAnswer
	f.call("PATCH", "/api/settings", map[string]any{"askTimeoutSeconds": 5}, 200, &st)
	if st.AskTimeoutSeconds != 5 || slices.Contains(st.RestartRequired, "askTimeoutSeconds") {
		t.Fatalf("settings = %+v", st)
	}
	sock := f.dial("/api/sessions/"+ses.ID+"/ws", nil)
	done := make(chan host.Outcome, 1)
	go func() {
		var out host.Outcome
		_, data := f.request("POST", "/api/tools/confirm_it/run", map[string]any{"args": map[string]any{"question": "anyone?"}, "sessionId": ses.ID}, nil)
		_ = json.Unmarshal(data, &out)
		done <- out
	}()
	pending, _ := sock.until("ask.pending", 60*time.Second)
	var p hub.AskPendingPayload
	mustJSON(t, pending.Payload, &p)
	if d := p.Ask.ExpiresAt.Sub(p.Ask.CreatedAt); d != 5*time.Second {
		t.Fatalf("the ask expires after %v, want 5s", d)
	}
	resolved, _ := sock.until("ask.resolved", 30*time.Second)
	var res hub.AskResolvedPayload
	mustJSON(t, resolved.Payload, &res)
	if res.Outcome != hub.OutcomeTimeout {
		t.Fatalf("ask.resolved = %s", resolved.Payload)
	}
	if out := <-done; out.Result.Success {
		t.Fatalf("a timed-out confirm succeeded: %+v", out)
	}
}

// workRounds set through the API is the budget of the next turn, without a restart, and
// stays after one.
func TestRoundLimitsSetting(t *testing.T) {
	f := newFixture(t).start()
	_, ses := f.session()
	// The model calls write_note when the user has just spoken, and answers once it has
	// the result.
	f.fake.Respond(func(r providertest.Request) providertest.Reply {
		var body struct{ Messages []struct{ Role string } }
		if err := r.Decode(&body); err == nil && len(body.Messages) > 0 && body.Messages[len(body.Messages)-1].Role == "user" {
			// A call id of its own each time: the harness drops a repeated one as a duplicate.
			id := fmt.Sprintf("call_%d", len(body.Messages))
			return providertest.OpenAIToolCall("test-model", id, "write_note", `{"path":"n.txt","text":"x"}`)
		}
		return providertest.OpenAIText("test-model", "written")
	})
	// turn runs a turn and returns why it ended and how many model calls it made.
	turn := func() (string, int) {
		t.Helper()
		before := len(f.fake.Requests())
		sock := f.dial("/api/sessions/"+ses.ID+"/ws?after=0", nil)
		defer sock.close()
		var started struct{ Turn struct{ ID string } }
		f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "write"}, 202, &started)
		for {
			fin, _ := sock.until("turn.finished", 60*time.Second)
			var p struct{ TurnID, Reason string }
			mustJSON(t, fin.Payload, &p)
			if p.TurnID == started.Turn.ID {
				return p.Reason, len(f.fake.Requests()) - before
			}
		}
	}
	if reason, calls := turn(); reason != "done" || calls != 2 {
		t.Fatalf("with the default budget the turn ended %q after %d model calls, want done after 2", reason, calls)
	}
	var st settingsAnswer
	f.call("PATCH", "/api/settings", map[string]any{"workRounds": 1}, 200, &st)
	if st.WorkRounds != 1 || len(st.RestartRequired) != 0 {
		t.Fatalf("settings after PATCH workRounds 1: %+v", st)
	}
	if reason, calls := turn(); reason != "budget" || calls != 1 {
		t.Fatalf("workRounds 1 applied live: the turn ended %q after %d model calls, want budget after 1", reason, calls)
	}
	// It is kept: after a restart it still applies.
	f.stop()
	f.start()
	if reason, calls := turn(); reason != "budget" || calls != 1 {
		t.Fatalf("workRounds 1 after a restart: the turn ended %q after %d model calls, want budget after 1", reason, calls)
	}
}

// settingsAnswer is the settings routes' answer, with the field older servers sent for
// settings that needed a restart (none does now).
type settingsAnswer struct {
	Settings
	RestartRequired []string `json:"restartRequired"`
}

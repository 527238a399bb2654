package server

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/provider/providertest"
)

// untilGoal reads the session's events until goal.changed reports a goal in a state other
// than active; it returns that goal and the events before it.
func untilGoal(t *testing.T, sock *socket) (harness.Goal, []event) {
	t.Helper()
	var all []event
	for {
		ev, before := sock.until(harness.EventGoalChanged, 90*time.Second)
		all = append(all, before...)
		all = append(all, ev)
		var p harness.GoalChanged
		mustJSON(t, ev.Payload, &p)
		if p.Goal != nil && p.Goal.State != harness.GoalActive && p.Goal.TurnsUsed > 0 {
			return *p.Goal, all
		}
	}
}

// count is how many events of typ are in evs.
func count(evs []event, typ string) int {
	n := 0
	for _, ev := range evs {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

// A goal set through the API is judged after each turn by a model call with the condition;
// the scripted evaluator says not done once (the agent goes on with a message marked as
// jean2's carrying the evaluator's reason) and then done: exactly two turns ran, the goal
// is met, and the session's view shows it.
func TestGoalRunsUntilMet(t *testing.T) {
	f := newFixture(t).start()
	_, ses := f.session()
	var set struct{ Goal harness.Goal }
	f.call("PUT", "/api/sessions/"+ses.ID+"/goal", map[string]any{"condition": "hello.txt says hello", "maxTurns": 5}, 200, &set)
	if set.Goal.State != harness.GoalActive || set.Goal.MaxTurns != 5 {
		t.Fatalf("the goal set: %+v", set.Goal)
	}
	f.fake.Push(
		providertest.OpenAIText("test-model", "I looked around."),
		providertest.OpenAIText("test-model", `{"done": false, "reason": "write hello into hello.txt"}`),
		providertest.OpenAIText("test-model", "I wrote hello into hello.txt."),
		providertest.OpenAIText("test-model", "```json\n{\"done\": true, \"reason\": \"the agent wrote it\"}\n```"),
	)
	sock := f.dial("/api/sessions/"+ses.ID+"/ws", nil)
	f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "make hello.txt"}, 202, nil)
	g, evs := untilGoal(t, sock)
	if g.State != harness.GoalMet || g.TurnsUsed != 2 || g.Verdict == nil || !g.Verdict.Done {
		t.Fatalf("the goal at its end: %+v", g)
	}
	if n := count(evs, "turn.finished"); n != 2 {
		t.Errorf("%d turns finished, want 2", n)
	}
	reqs := f.fake.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4 (two turns, two evaluations)", len(reqs))
	}
	for _, i := range []int{1, 3} {
		if b := string(reqs[i].Body); !strings.Contains(b, "hello.txt says hello") || !strings.Contains(b, `\"done\"`) {
			t.Errorf("evaluation request %d lacks the condition or the JSON asked for: %.300s", i, b)
		}
	}
	if b := string(reqs[3].Body); !strings.Contains(b, "I wrote hello into hello.txt.") {
		t.Errorf("the second evaluation does not read the second turn's answer: %.500s", b)
	}
	want := harness.GoalContinuePrefix + "Continue towards the goal: write hello into hello.txt"
	if b := string(reqs[2].Body); !strings.Contains(b, want) {
		t.Errorf("the second turn's request lacks %q: %.800s", want, b)
	}
	var view sessionView
	f.call("GET", "/api/sessions/"+ses.ID, nil, 200, &view)
	if view.Goal == nil || view.Goal.State != harness.GoalMet || view.Goal.TurnsUsed != 2 {
		t.Errorf("the session view's goal: %+v", view.Goal)
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(f.fake.Requests()); n != 4 || f.srv.harness.Running(ses.ID) {
		t.Errorf("after the goal was met: %d requests, running %v", n, f.srv.harness.Running(ses.ID))
	}
}

// A goal whose evaluator never says done stops when its budget of turns is spent: a budget
// of 2 runs two turns and the goal is marked "budget spent".
func TestGoalStopsWhenBudgetSpent(t *testing.T) {
	f := newFixture(t).start()
	_, ses := f.session()
	notDone := providertest.OpenAIText("test-model", `{"done": false, "reason": "keep going"}`)
	f.fake.Push(
		providertest.OpenAIText("test-model", "one"), notDone,
		providertest.OpenAIText("test-model", "two"), notDone,
		providertest.OpenAIText("test-model", "three, never asked for"),
	)
	sock := f.dial("/api/sessions/"+ses.ID+"/ws", nil)
	var set struct {
		Goal harness.Goal
		Turn *harness.TurnInfo
	}
	f.call("PUT", "/api/sessions/"+ses.ID+"/goal", map[string]any{"condition": "never", "maxTurns": 2, "start": true}, 200, &set)
	if set.Turn == nil {
		t.Fatalf("start: true started no turn")
	}
	g, evs := untilGoal(t, sock)
	if g.State != harness.GoalBudgetSpent || g.TurnsUsed != 2 {
		t.Fatalf("the goal at its end: %+v", g)
	}
	if n := count(evs, "turn.finished"); n != 2 {
		t.Errorf("%d turns finished, want 2", n)
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(f.fake.Requests()); n != 4 {
		t.Errorf("%d model requests, want 4", n)
	}
	first := string(f.fake.Requests()[0].Body)
	if !strings.Contains(first, harness.GoalContinuePrefix+"Work towards this goal: never") {
		t.Errorf("the first turn's message: %.500s", first)
	}
	var raw struct{ Goal json.RawMessage }
	f.call("GET", "/api/sessions/"+ses.ID+"/goal", nil, 200, &raw)
	if !strings.Contains(string(raw.Goal), `"state":"budget spent"`) {
		t.Errorf("GET goal: %s", raw.Goal)
	}
}

// Stop between a goal's turns stops its evaluation: the goal ends "stopped" and no turn
// follows.
func TestGoalStopDuringEvaluation(t *testing.T) {
	f := newFixture(t).start()
	_, ses := f.session()
	f.fake.Push(
		providertest.OpenAIText("test-model", "one"),
		providertest.NewOpenAIStream("test-model").Pause(60*time.Second).Text(`{"done": false, "reason": "go on"}`).Finish("stop").Done().Reply(),
		providertest.OpenAIText("test-model", "a turn that must not run"),
	)
	sock := f.dial("/api/sessions/"+ses.ID+"/ws", nil)
	f.call("PUT", "/api/sessions/"+ses.ID+"/goal", map[string]any{"condition": "c", "start": true}, 200, nil)
	sock.until("turn.finished", 60*time.Second)
	deadline := time.Now().Add(30 * time.Second)
	for len(f.fake.Requests()) < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	var stop struct{ Stopped bool }
	f.call("POST", "/api/sessions/"+ses.ID+"/stop", nil, 200, &stop)
	if !stop.Stopped {
		t.Errorf("stop between the goal's turns stopped nothing")
	}
	g, _ := untilGoal(t, sock)
	if g.State != harness.GoalStopped || g.TurnsUsed != 1 {
		t.Fatalf("the goal after Stop: %+v", g)
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(f.fake.Requests()); n != 2 {
		t.Errorf("%d model requests after Stop, want 2", n)
	}
}

// A goal a person sets while the last one's evaluation runs stands: the verdict on the old
// goal neither overwrites it nor starts a turn.
func TestGoalSetDuringEvaluationStands(t *testing.T) {
	f := newFixture(t).start()
	_, ses := f.session()
	f.fake.Push(
		providertest.OpenAIText("test-model", "one"),
		providertest.NewOpenAIStream("test-model").Pause(time.Second).Text(`{"done": false, "reason": "go on"}`).Finish("stop").Done().Reply(),
		providertest.OpenAIText("test-model", "a turn that must not run"),
	)
	f.call("PUT", "/api/sessions/"+ses.ID+"/goal", map[string]any{"condition": "old", "start": true}, 200, nil)
	deadline := time.Now().Add(60 * time.Second)
	for len(f.fake.Requests()) < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	f.call("PUT", "/api/sessions/"+ses.ID+"/goal", map[string]any{"condition": "new", "maxTurns": 3}, 200, nil)
	time.Sleep(2 * time.Second)
	var got struct{ Goal harness.Goal }
	f.call("GET", "/api/sessions/"+ses.ID+"/goal", nil, 200, &got)
	if got.Goal.Condition != "new" || got.Goal.State != harness.GoalActive || got.Goal.TurnsUsed != 0 || got.Goal.Verdict != nil {
		t.Errorf("the goal after the old one's verdict: %+v", got.Goal)
	}
	if n := len(f.fake.Requests()); n != 2 || f.srv.harness.Running(ses.ID) {
		t.Errorf("%d model requests, running %v; want 2, idle", n, f.srv.harness.Running(ses.ID))
	}
}

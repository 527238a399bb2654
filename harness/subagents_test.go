package harness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/hub"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/tool"
	"github.com/jean2/jean2/undo"
)

// Tools of the subagent tests.
var subagentTools = map[string]string{
	// span works for ms milliseconds and writes down when it began and ended.
	"span": `import fs from 'node:fs';
import path from 'node:path';
export const definition = { name: 'span', description: 'Work and time it.', timeout: 60000,
  inputSchema: { type: 'object', properties: { dir: { type: 'string' }, id: { type: 'string' }, ms: { type: 'number' } }, required: ['dir', 'id', 'ms'] } };
export async function execute(input) {
  const start = Date.now();
  await new Promise((r) => setTimeout(r, input.ms));
  fs.mkdirSync(input.dir, { recursive: true });
  fs.writeFileSync(path.join(input.dir, input.id), start + ' ' + Date.now());
  return { success: true, result: { ok: true } };
}
`,
	// nap is work that takes ms milliseconds.
	"nap": `export const definition = { name: 'nap', description: 'Work for a while.', timeout: 60000,
  inputSchema: { type: 'object', properties: { ms: { type: 'number' } }, required: ['ms'] } };
export async function execute(input) {
  await new Promise((r) => setTimeout(r, input.ms));
  return { success: true, result: { slept: input.ms } };
}
`,
	// confirm asks the person a yes/no question and says what they answered.
	"confirm": `export const definition = { name: 'confirm', description: 'Ask the person.', timeout: 60000,
  inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] } };
export async function execute(input, ctx) {
  const yes = await ctx.ask({ type: 'confirm', target: 'human', question: input.q });
  return { success: true, result: { answered: yes } };
}
`,
}

// req is what the subagent tests read of a request: whose it is and where it is.
type req struct {
	oaiRequest
	user    string   // the first user message: the tests start each session with a marker
	system  string   // the system prompt
	results []string // the tool results so far
	tools   []string // the tools offered
}

func readReq(t testing.TB, r providertest.Request) req {
	var o req
	if err := r.Decode(&o.oaiRequest); err != nil {
		t.Error(err)
		return o
	}
	for _, m := range o.Messages {
		switch m.Role {
		case "system":
			o.system += text(m.Content)
		case "user":
			if o.user == "" {
				o.user = text(m.Content)
			}
		case "tool":
			o.results = append(o.results, text(m.Content))
		}
	}
	for _, tl := range o.Tools {
		o.tools = append(o.tools, tl.Function.Name)
	}
	return o
}

func newSubagentFixture(t testing.TB, adjust func(*harness.Options)) *fixture {
	return newFixture(t, fixtureOptions{snapshots: true, tools: subagentTools,
		builtins: []tool.Tool{harness.TaskTool()}, adjust: adjust})
}

// respond answers every request with fn, on the fake provider's goroutines.
func (f *fixture) respond(fn func(r req) providertest.Reply) {
	f.srv.Respond(func(r providertest.Request) providertest.Reply { return fn(readReq(f.t, r)) })
}

func (f *fixture) call(id, name string, args any) providertest.Reply {
	return providertest.OpenAIToolCall(f.model, id, name, jsonArgs(args))
}

func (f *fixture) say(s string) providertest.Reply { return providertest.OpenAIText(f.model, s) }

// children are the child sessions of a session.
func (f *fixture) children(parent string) []store.Subagent {
	f.t.Helper()
	subs, err := f.db.Children(context.Background(), parent)
	if err != nil {
		f.t.Fatal(err)
	}
	return subs
}

// finished is the turn.finished of a session's last turn.
func (f *fixture) finished(sessionID string) harness.TurnFinished {
	f.t.Helper()
	evs, err := f.db.EventsAfter(context.Background(), sessionID, 0, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	var fin harness.TurnFinished
	for _, e := range evs {
		if e.Type == harness.EventTurnFinished {
			fin = harness.TurnFinished{}
			if err := json.Unmarshal(e.Payload, &fin); err != nil {
				f.t.Fatal(err)
			}
		}
	}
	return fin
}

// A task call starts a child session with its prompt, instructions, tools and model, which runs a
// tool call and answers; the parent gets that answer; the child is stored under its parent;
// the parent's "Changed" counts what the child wrote, and a Restore of the parent's turn puts
// it back.
func TestSubagentTaskReturnsTheChildsAnswer(t *testing.T) {
	f := newSubagentFixture(t, nil)
	child, shell := filepath.Join(f.ws, "child.txt"), filepath.Join(f.ws, "shell.txt")
	var childReq req
	f.respond(func(r req) providertest.Reply {
		switch {
		case r.user == "PARENT" && len(r.results) == 0:
			return f.call("call_task", "task", map[string]any{"description": "write a note", "prompt": "CHILD: write child.txt",
				"instructions": "CHILD-INSTRUCTIONS", "tools": []string{"note", "shell_write"}, "model": "gpt-child"})
		case r.user == "PARENT":
			return f.say("parent saw: " + r.results[0])
		case len(r.results) == 0:
			childReq = r
			return f.call("call_note", "note", map[string]any{"path": child, "text": "from the child"})
		case len(r.results) == 1: // behind ctx.fs's back, as a shell command would
			return f.call("call_shell", "shell_write", map[string]any{"files": map[string]string{shell: "from a command"}})
		}
		return f.say("CHILD-ANSWER wrote child.txt")
	})
	info, fin := f.turn("PARENT")
	if fin.Reason != harness.ReasonDone {
		t.Fatalf("parent finished %+v", fin)
	}
	msgs := f.messages()
	if last := msgs[len(msgs)-1]; !strings.Contains(last.Content, "CHILD-ANSWER wrote child.txt") {
		t.Fatalf("the parent's last answer does not carry the child's: %q", last.Content)
	}
	if !strings.Contains(childReq.system, "CHILD-INSTRUCTIONS") || !strings.Contains(childReq.system, "You are a subagent") {
		t.Fatalf("the child's system prompt lacks its instructions: %q", childReq.system)
	}
	if childReq.Model != "gpt-child" {
		t.Fatalf("the child asked model %q, want the gpt-child its parent chose", childReq.Model)
	}
	if !slices.Equal(childReq.tools, []string{"note", "shell_write"}) {
		t.Fatalf("the child was offered %v, want only [note shell_write]", childReq.tools)
	}
	subs := f.children(f.session.ID)
	if len(subs) != 1 || subs[0].ParentCallID != "call_task" || !slices.Equal(subs[0].Tools, []string{"note", "shell_write"}) {
		t.Fatalf("children %+v", subs)
	}
	cs, err := f.db.Session(context.Background(), subs[0].SessionID)
	if err != nil || cs.WorkspaceID != f.session.WorkspaceID || cs.Title != "write a note" || cs.Model != "gpt-child" {
		t.Fatalf("child session %+v, %v", cs, err)
	}
	f.waitEvent(harness.EventSubagentStarted, subs[0].SessionID, "call_task")
	f.waitEvent(harness.EventSubagentFinished, subs[0].SessionID, `"reason":"done"`)
	if fin.Changed.Files != 2 || !slices.Contains(fin.Changed.Paths, child) || !slices.Contains(fin.Changed.Paths, shell) {
		t.Fatalf("the parent's turn changed %+v, want the child's %s and %s", fin.Changed, child, shell)
	}
	if _, err := f.h.Restore(context.Background(), f.session.ID, info.UserMessageID, undo.RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{child, shell} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("after restoring the parent's turn, %s the child wrote is still there (%v)", p, err)
		}
	}
}

// A child may start a child; a grandchild is not offered task, and its task call is
// refused. A task call may not give a child a tool its parent lacks, and a child may not
// call a tool it was not given.
func TestSubagentDepthAndTools(t *testing.T) {
	f := newSubagentFixture(t, func(o *harness.Options) { o.WorkRounds = 20 })
	var grandTools, lastGrandTools []string
	f.respond(func(r req) providertest.Reply {
		if r.user == "GRANDCHILD" {
			lastGrandTools = r.tools
		}
		switch {
		case r.user == "PARENT" && len(r.results) == 0:
			return f.call("call_p1", "task", map[string]any{"prompt": "CHILD", "tools": []string{"task", "note", "not_a_tool"}})
		case r.user == "PARENT" && len(r.results) == 1:
			return f.call("call_p2", "task", map[string]any{"prompt": "CHILD", "tools": []string{"task", "trivial"}})
		case r.user == "PARENT":
			return f.say("parent: " + strings.Join(r.results, " | "))
		case r.user == "CHILD" && len(r.results) == 0:
			return f.call("call_c1", "note", map[string]any{"path": "x.txt", "text": "x"})
		case r.user == "CHILD" && len(r.results) == 1:
			return f.call("call_c2", "task", map[string]any{"prompt": "GRANDCHILD"})
		case r.user == "CHILD":
			return f.say("child: " + strings.Join(r.results, " | "))
		case r.user == "GRANDCHILD" && len(r.results) == 0:
			grandTools = r.tools
			return f.call("call_g1", "task", map[string]any{"prompt": "TOO DEEP"})
		}
		return f.say("grandchild: " + strings.Join(r.results, " | "))
	})
	_, fin := f.turn("PARENT")
	if fin.Reason != harness.ReasonDone {
		t.Fatalf("parent finished %+v", fin)
	}
	msgs := f.messages()
	answer := msgs[len(msgs)-1].Content
	for _, want := range []string{
		`tool \"not_a_tool\" is not one of yours`,        // refused before any child starts
		`tool note is not among the tools this subagent`, // the child may not call note
		`may not start subagents`,                        // the grandchild's task call
	} {
		if !strings.Contains(answer, want) {
			t.Errorf("the parent's answer lacks %q:\n%s", want, answer)
		}
	}
	if slices.Contains(grandTools, "task") || !slices.Equal(grandTools, []string{"trivial"}) {
		t.Errorf("the grandchild was offered %v, want [trivial] (no task at depth 2)", grandTools)
	}
	kids := f.children(f.session.ID)
	if len(kids) != 1 {
		t.Fatalf("%d children, want 1 (the refused call starts none)", len(kids))
	}
	grand := f.children(kids[0].SessionID)
	if len(grand) != 1 || len(f.children(grand[0].SessionID)) != 0 {
		t.Fatalf("grandchildren %+v", grand)
	}
	// A person who talks to the grandchild directly finds it as limited as its parent left it.
	f.session.ID = grand[0].SessionID
	if _, fin := f.turn("and now?"); fin.Reason != harness.ReasonDone || !slices.Equal(lastGrandTools, []string{"trivial"}) {
		t.Fatalf("a turn of the grandchild's own: %+v, offered %v", fin, lastGrandTools)
	}
}

// An ask of a child's tool reaches the person attached to the root session, names the
// child, and the answer given through the root session's asks reaches the child's tool.
func TestSubagentAskReachesThePerson(t *testing.T) {
	f := newSubagentFixture(t, nil)
	f.respond(func(r req) providertest.Reply {
		switch {
		case r.user == "PARENT" && len(r.results) == 0:
			return f.call("call_task", "task", map[string]any{"prompt": "CHILD"})
		case r.user == "PARENT":
			return f.say("parent: " + r.results[0])
		case len(r.results) == 0:
			return f.call("call_confirm", "confirm", map[string]any{"q": "May the child go on?"})
		}
		return f.say("child: " + r.results[0])
	})
	sub, err := f.hub.Subscribe(context.Background(), f.session.ID, 0) // the person, on the parent
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	info := f.start("PARENT")
	ev := f.waitEvent(hub.EventAskPending, "May the child go on?")
	var p hub.AskPendingPayload
	if err := json.Unmarshal(ev.Payload, &p); err != nil {
		t.Fatal(err)
	}
	kids := f.children(f.session.ID)
	if len(kids) != 1 || p.Ask.FromSessionID != kids[0].SessionID || p.Ask.SessionID != f.session.ID {
		t.Fatalf("ask %+v does not name the child %+v", p.Ask, kids)
	}
	if err := f.hub.Answer(context.Background(), f.session.ID, p.Ask.ID, json.RawMessage(`true`)); err != nil {
		t.Fatal(err)
	}
	fin := f.wait(info)
	msgs := f.messages()
	if fin.Reason != harness.ReasonDone || !strings.Contains(msgs[len(msgs)-1].Content, `"answered":true`) {
		t.Fatalf("finished %+v; last answer %q", fin, msgs[len(msgs)-1].Content)
	}
}

// Stop of the parent stops the child's running call and turn.
func TestSubagentStopFromTheParent(t *testing.T) {
	f := newSubagentFixture(t, nil)
	marker := filepath.Join(f.root, "slow")
	f.respond(func(r req) providertest.Reply {
		switch {
		case r.user == "PARENT" && len(r.results) == 0:
			return f.call("call_task", "task", map[string]any{"prompt": "CHILD"})
		case r.user == "PARENT":
			return f.say("parent went on")
		case len(r.results) == 0:
			return f.call("call_slow", "slow", map[string]any{"marker": marker})
		}
		return f.say("child went on")
	})
	info := f.start("PARENT")
	waitFile(t, marker+".started")
	kids := f.children(f.session.ID)
	if len(kids) != 1 || !f.h.Running(kids[0].SessionID) {
		t.Fatalf("children %+v, running", kids)
	}
	if !f.h.Stop(f.session.ID) {
		t.Fatal("Stop found no turn")
	}
	fin := f.wait(info)
	if fin.Reason != harness.ReasonStopped {
		t.Fatalf("parent finished %+v", fin)
	}
	if cf := f.finished(kids[0].SessionID); cf.Reason != harness.ReasonStopped {
		t.Fatalf("child finished %+v", cf)
	}
	if f.h.Running(kids[0].SessionID) {
		t.Fatal("the child still runs")
	}
	seen, _ := os.ReadFile(marker)
	if !strings.Contains(string(seen), "abort") {
		t.Fatalf("the child's call saw %q, want its abort", seen)
	}
}

// The work budget covers the tree: a child that keeps calling tools ends when the rounds
// of the whole tree reach the parent's budget, and so does the parent.
func TestSubagentBudgetCoversTheTree(t *testing.T) {
	f := newSubagentFixture(t, func(o *harness.Options) { o.WorkRounds = 3 })
	f.respond(func(r req) providertest.Reply {
		switch {
		case r.user == "PARENT" && len(r.results) == 0:
			return f.call("call_task", "task", map[string]any{"prompt": "CHILD"})
		case r.user == "PARENT":
			return f.call("call_more", "trivial", map[string]any{})
		}
		return f.call("call_c"+string(rune('0'+len(r.results))), "trivial", map[string]any{})
	})
	_, fin := f.turn("PARENT")
	kids := f.children(f.session.ID)
	if len(kids) != 1 {
		t.Fatalf("children %+v", kids)
	}
	cf := f.finished(kids[0].SessionID)
	if cf.Reason != harness.ReasonBudget || cf.Rounds != 3 {
		t.Fatalf("child finished %+v, want budget after 3 rounds", cf)
	}
	if fin.Reason != harness.ReasonBudget || fin.Rounds != 1 {
		t.Fatalf("parent finished %+v, want budget after its 1 round (the child spent the rest)", fin)
	}
}

// tasks is an answer of n task calls, whose prompts are CHILD-0…CHILD-n-1.
func (f *fixture) tasks(n int) providertest.Reply {
	b := providertest.NewOpenAIStream(f.model)
	for i := range n {
		b.ToolCall(i, fmt.Sprintf("call_task%d", i), "task", jsonArgs(map[string]any{"prompt": fmt.Sprintf("CHILD-%d", i)}))
	}
	return b.Finish("tool_calls").Usage(10, 1).Done().Reply()
}

// Task calls of one answer run at once: five children, each calling a tool that writes to
// the workspace (not read-only), meet at a barrier that only five calls running together
// pass.
func TestSubagentsRunConcurrently(t *testing.T) {
	f := newSubagentFixture(t, func(o *harness.Options) { o.WorkRounds = 20 })
	dir := filepath.Join(f.root, "barrier")
	f.respond(func(r req) providertest.Reply {
		switch {
		case r.user == "PARENT" && len(r.results) == 0:
			return f.tasks(5)
		case r.user == "PARENT":
			return f.say("parent: " + strings.Join(r.results, " | "))
		case len(r.results) == 0:
			return f.call("call_probe_"+r.user, "probe_rw", map[string]any{"dir": dir, "id": r.user, "n": 5, "waitMs": 20000})
		}
		return f.say(r.user + ": " + r.results[0])
	})
	_, fin := f.turn("PARENT")
	msgs := f.messages()
	answer := msgs[len(msgs)-1].Content
	if fin.Reason != harness.ReasonDone || strings.Count(answer, `"met":true`) != 5 {
		t.Fatalf("finished %+v; not all 5 children met at the barrier:\n%s", fin, answer)
	}
}

// At most MaxRunningChildren children of a turn run at once: of seven task calls, the
// children's work never overlaps more than five deep, and the calls that wait say so.
func TestSubagentsRunAtMostFiveAtOnce(t *testing.T) {
	const n = harness.MaxRunningChildren + 2
	f := newSubagentFixture(t, func(o *harness.Options) { o.WorkRounds = 30 })
	dir := filepath.Join(f.root, "spans")
	f.respond(func(r req) providertest.Reply {
		switch {
		case r.user == "PARENT" && len(r.results) == 0:
			return f.tasks(n)
		case r.user == "PARENT":
			return f.say("parent done")
		case len(r.results) == 0:
			return f.call("call_span_"+r.user, "span", map[string]any{"dir": dir, "id": r.user, "ms": 300})
		}
		return f.say(r.user + " done")
	})
	_, fin := f.turn("PARENT")
	if fin.Reason != harness.ReasonDone {
		t.Fatalf("finished %+v", fin)
	}
	if got := len(f.children(f.session.ID)); got != n {
		t.Fatalf("%d children, want %d", got, n)
	}
	if most := mostOverlapping(t, dir); most > harness.MaxRunningChildren || most < 2 {
		t.Fatalf("up to %d children worked at once, want 2…%d", most, harness.MaxRunningChildren)
	}
	f.waitEvent(harness.EventToolProgress, "subagents are running, the most at once")
}

// mostOverlapping reads the spans the span tool wrote (id: "start end" in ms) and returns
// how many overlapped at most.
func mostOverlapping(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	type edge struct {
		at    int64
		delta int
	}
	var edges []edge
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var start, end int64
		if _, err := fmt.Sscan(string(b), &start, &end); err != nil {
			t.Fatalf("span %s: %q: %v", e.Name(), b, err)
		}
		edges = append(edges, edge{start, +1}, edge{end, -1})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return a.delta - b.delta // an end before a start at the same instant
	})
	most, now := 0, 0
	for _, e := range edges {
		now += e.delta
		most = max(most, now)
	}
	return most
}

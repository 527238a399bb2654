//go:build unix

package main

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/store"
)

// SIGSTOP of the instance running a turn, past its lease: the other instance seals the turn
// and runs one of its own; on SIGCONT the paused one writes nothing more to the session (no
// second turn.finished, the sealed messages stay as sealed, nothing lands in the other's
// turn), and its log says why (issue 29, point 3).
func TestClusterPausedInstanceWritesNothingAfterLosingItsLease(t *testing.T) {
	forEachCluster(t, testClusterPausedInstance)
}

func testClusterPausedInstance(t *testing.T, f *clusterFixture) {
	const ttl = 2 * time.Second
	a := f.start("inst-a", ttl)
	b := f.start("inst-b", ttl)
	var ws store.Workspace
	b.call("POST", "/api/workspaces", map[string]any{"path": f.ws}, 201, &ws)
	var ses store.Session
	b.call("POST", "/api/workspaces/"+ws.ID+"/sessions", map[string]any{"title": "paused"}, 201, &ses)

	f.fake.Push(providertest.NewOpenAIStream("test-model").Text("Starting.").ToolCall(0, "call_wait", "waiter", `{}`).Finish("tool_calls").Done().Reply())
	var turnA struct{ ID string }
	a.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "work"}, 202, &turnA)
	a.waitEvent(ses.ID, 0, "part.updated", `"running"`)
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.cmd.Process.Signal(syscall.SIGCONT) })
	paused := time.Now()
	fin := b.waitEvent(ses.ID, 0, "turn.finished", `"interrupted"`)
	t.Logf("B sealed paused A's turn %s after SIGSTOP (lease TTL %s)", time.Since(paused).Round(10*time.Millisecond), ttl)
	var sealed struct{ Messages []store.Message }
	b.call("GET", "/api/sessions/"+ses.ID+"/messages", nil, 200, &sealed)

	// B runs a turn of its own in the session while A is still paused.
	f.fake.Push(providertest.NewOpenAIStream("test-model").ToolCall(0, "call_wait_b", "waiter", `{}`).Finish("tool_calls").Done().Reply())
	b.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "carry on"}, 202, nil)
	running := b.waitEvent(ses.ID, fin.Seq, "part.updated", `"running"`)

	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// A's heartbeat runs at once on resume and finds the lease gone; give its turn time to
	// end and try to write that end.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(a.logs.String(), "taken over") && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(3 * time.Second)

	var page struct{ Events []store.Event }
	b.call("GET", "/api/sessions/"+ses.ID+"/events?after="+itoa(running.Seq), nil, 200, &page)
	for _, ev := range page.Events {
		if ev.Type == "turn.finished" || strings.Contains(string(ev.Payload), turnA.ID) || strings.Contains(string(ev.Payload), "call_wait\"") {
			t.Errorf("A wrote into the session after losing its lease, during B's turn:%s", describe(page.Events))
			break
		}
	}
	var after struct{ Messages []store.Message }
	b.call("GET", "/api/sessions/"+ses.ID+"/messages", nil, 200, &after)
	now := map[string]store.Message{}
	for _, m := range after.Messages {
		now[m.ID] = m
	}
	for _, m := range sealed.Messages {
		if n := now[m.ID]; n.Status != m.Status || n.Content != m.Content || len(n.Parts) != len(m.Parts) {
			t.Errorf("message %s changed after B sealed it: %s %q (%d parts) -> %s %q (%d parts)",
				m.ID, m.Status, m.Content, len(m.Parts), n.Status, n.Content, len(n.Parts))
		}
	}
	// Its turn's end was refused, and its log says so.
	if !strings.Contains(a.logs.String(), "a write of a turn was refused: its lease was taken over by another instance") {
		t.Errorf("A's log does not say its writes were refused:\n%s", a.logs)
	}
	t.Logf("A's log after SIGCONT:\n%s", tail(a.logs.String(), 12))
	// B's turn is untouched: Stop ends it as stopped, and its end is the one turn.finished.
	b.call("POST", "/api/sessions/"+ses.ID+"/stop", nil, 200, nil)
	b.waitEvent(ses.ID, running.Seq, "turn.finished", `"stopped"`)
	for _, s := range []*served{a, b} {
		if err := s.kill(syscall.SIGTERM); err != nil {
			t.Fatalf("stop: %v\n%s", err, s.logs)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

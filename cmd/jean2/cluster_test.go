package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/jean2/jean2/internal/pgtest"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/store"
)

// Tools of the cluster tests, the same folders on every instance (a deployment copies them).
var clusterTools = map[string]string{
	// asker asks a person which environment, and returns the answer.
	"asker": `export const definition = { name: 'asker', description: 'asks', inputSchema: { type: 'object' } };
export async function execute(_, ctx) {
  const env = await ctx.ask({ target: 'human', type: 'single_select', question: 'Which environment?', options: [{ label: 'Production', value: 'prod' }, { label: 'Staging', value: 'staging' }] });
  return { success: true, result: { env } };
}
`,
	// waiter waits until its call is stopped (or two minutes).
	"waiter": `export const definition = { name: 'waiter', description: 'waits', inputSchema: { type: 'object' } };
export async function execute(_, ctx) {
  const seen = await new Promise((res) => {
    const t = setTimeout(() => res('timer'), 120000);
    ctx.abortSignal.addEventListener('abort', () => { clearTimeout(t); res('aborted'); });
  });
  return { success: false, error: 'saw ' + seen };
}
`,
}

// cluster is several jean2 serve processes, each with its own JEAN2_HOME, on one database.
type clusterFixture struct {
	t    *testing.T
	db   string // the shared database: a file, or a postgres:// URL
	fake *providertest.Server
	ws   string // the workspace folder, on this one host
}

func newClusterFixture(t *testing.T, backend string) *clusterFixture {
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(root, "shared", "jean2.db")
	if backend == "postgres" {
		db = pgtest.URL(t)
	}
	return &clusterFixture{t: t, db: db, fake: providertest.NewOpenAI(t), ws: ws}
}

// forEachCluster runs fn on instances sharing a SQLite file (one host) and on instances
// sharing a Postgres database.
func forEachCluster(t *testing.T, fn func(t *testing.T, f *clusterFixture)) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) { fn(t, newClusterFixture(t, backend)) })
	}
}

// start runs an instance named id (JEAN2_INSTANCE_ID) with a lease of ttl.
func (f *clusterFixture) start(id string, ttl time.Duration) *served {
	c := newCLI(f.t)
	for name, src := range clusterTools {
		dir := filepath.Join(c.home, "tools", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			f.t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "tool.js"), []byte(src), 0o644); err != nil {
			f.t.Fatal(err)
		}
	}
	env := []string{
		"OPENAI_BASE_URL=" + f.fake.BaseURL(), "OPENAI_API_KEY=sk-test", "OPENAI_MODEL=test-model",
		"JEAN2_INSTANCE_ID=" + id, "JEAN2_LEASE_TTL=" + ttl.String(), "JEAN2_LOG=info",
	}
	database := "postgres"
	if store.IsPostgresURL(f.db) {
		// Postgres: the cluster is implied, and notifications wake the instances.
		env = append(env, "JEAN2_DATABASE_URL="+f.db)
	} else {
		database = "sqlite"
		env = append(env, "JEAN2_CLUSTER=on", "JEAN2_DB="+f.db, "JEAN2_CLUSTER_POLL=50ms")
	}
	s := startServe(f.t, c, env)
	var st struct {
		Instance string
		Cluster  bool
		Database string
	}
	s.call("GET", "/api/status", nil, 200, &st)
	if st.Instance != id || !st.Cluster || st.Database != database {
		f.t.Fatalf("GET /api/status of instance %s = %+v", id, st)
	}
	return s
}

// wsSocket reads a session's socket in the background.
type wsSocket struct {
	t      *testing.T
	c      *websocket.Conn
	frames chan store.Event
}

func (s *served) socket(sessionID string) *wsSocket {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	url := "ws" + strings.TrimPrefix(s.base, "http") + "/api/sessions/" + sessionID + "/ws"
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + s.token}}})
	if err != nil {
		s.t.Fatalf("dial %s: %v", url, err)
	}
	c.SetReadLimit(64 << 20)
	ws := &wsSocket{t: s.t, c: c, frames: make(chan store.Event, 10000)}
	go func() {
		defer close(ws.frames)
		for {
			_, data, err := c.Read(context.Background())
			if err != nil {
				return
			}
			var ev store.Event
			if json.Unmarshal(data, &ev) == nil && ev.Seq > 0 {
				ws.frames <- ev
			}
		}
	}()
	s.t.Cleanup(func() { c.CloseNow() })
	return ws
}

// until reads events until one of type typ whose payload holds substr; it returns the
// events read, that one last, and fails on a gap or a duplicate in the seqs.
func (w *wsSocket) until(last *int64, typ, substr string) []store.Event {
	w.t.Helper()
	var out []store.Event
	timer := time.NewTimer(90 * time.Second)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-w.frames:
			if !ok {
				w.t.Fatalf("the socket closed before %s %q", typ, substr)
			}
			if *last > 0 && ev.Seq != *last+1 {
				w.t.Fatalf("socket: seq %d after %d (gap or duplicate)", ev.Seq, *last)
			}
			*last = ev.Seq
			out = append(out, ev)
			if ev.Type == typ && strings.Contains(string(ev.Payload), substr) {
				return out
			}
		case <-timer.C:
			w.t.Fatalf("no %s %q on the socket; read %d events", typ, substr, len(out))
		}
	}
}

// rawCall is call that returns the status and body whatever they are.
func (s *served) rawCall(method, path string, body any) (int, string) {
	s.t.Helper()
	data, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, s.base+path, strings.NewReader(string(data)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, b.String()
}

// Two instances on one database: a session made on A is read on B; a turn started on B
// streams to a subscriber on A; a second start on A is refused naming B; an ask of a turn
// on B is answered on A; Stop on A stops B's turn.
func TestClusterTwoInstancesShareSessionsEventsAsksAndStop(t *testing.T) {
	forEachCluster(t, testClusterTwoInstances)
}

func testClusterTwoInstances(t *testing.T, f *clusterFixture) {
	a := f.start("inst-a", 3*time.Second)
	b := f.start("inst-b", 3*time.Second)

	var ws store.Workspace
	a.call("POST", "/api/workspaces", map[string]any{"path": f.ws}, 201, &ws)
	var ses store.Session
	a.call("POST", "/api/workspaces/"+ws.ID+"/sessions", map[string]any{"title": "shared"}, 201, &ses)
	var onB struct{ Title string }
	b.call("GET", "/api/sessions/"+ses.ID, nil, 200, &onB)
	if onB.Title != "shared" {
		t.Fatalf("the session made on A reads on B as %+v", onB)
	}

	// A turn on B streams to A's socket, every event once, in order.
	sock := a.socket(ses.ID)
	var last int64
	f.fake.Push(providertest.NewOpenAIStream("test-model").Text("Hello ").Text("from B.").Finish("stop").Done().Reply())
	b.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "hi"}, 202, nil)
	evs := sock.until(&last, "turn.finished", `"done"`)
	if evs[0].Type != "turn.started" || !strings.Contains(describe(evs), "Hello from B.") {
		t.Fatalf("A's socket saw: %s", describe(evs))
	}

	// An ask of a turn running on B, answered on A.
	f.fake.Push(providertest.NewOpenAIStream("test-model").ToolCall(0, "call_ask", "asker", `{}`).Finish("tool_calls").Done().Reply())
	f.fake.Push(providertest.OpenAIText("test-model", "Deployed."))
	b.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "deploy"}, 202, nil)
	pending := sock.until(&last, "ask.pending", "Which environment?")
	var ap struct{ Ask struct{ ID string } }
	if err := json.Unmarshal(pending[len(pending)-1].Payload, &ap); err != nil || ap.Ask.ID == "" {
		t.Fatalf("ask.pending: %s", pending[len(pending)-1].Payload)
	}
	// Meanwhile the session is B's: A refuses a turn, naming B.
	if status, body := a.rawCall("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "me too"}); status != 409 || !strings.Contains(body, "inst-b") {
		t.Fatalf("a turn on A while B runs one: %d %s", status, body)
	}
	var asks struct{ Asks []struct{ ID string } }
	a.call("GET", "/api/sessions/"+ses.ID+"/asks", nil, 200, &asks)
	if len(asks.Asks) != 1 || asks.Asks[0].ID != ap.Ask.ID {
		t.Fatalf("A lists the asks %+v, want the one waiting on B (%s)", asks.Asks, ap.Ask.ID)
	}
	if status, body := a.rawCall("POST", "/api/sessions/"+ses.ID+"/asks/"+ap.Ask.ID, map[string]any{"answer": "nowhere"}); status != 422 {
		t.Fatalf("a wrong answer on A: %d %s", status, body)
	}
	a.call("POST", "/api/sessions/"+ses.ID+"/asks/"+ap.Ask.ID, map[string]any{"answer": "prod"}, 200, nil)
	if status, body := a.rawCall("POST", "/api/sessions/"+ses.ID+"/asks/"+ap.Ask.ID, map[string]any{"answer": "staging"}); status != 404 {
		t.Fatalf("a second answer: %d %s", status, body)
	}
	sock.until(&last, "turn.finished", `"done"`)
	var msgs struct{ Messages []store.Message }
	b.call("GET", "/api/sessions/"+ses.ID+"/messages", nil, 200, &msgs)
	found := false
	for _, m := range msgs.Messages {
		for _, p := range m.Parts {
			if p.CallID == "call_ask" && strings.Contains(string(p.Result), "prod") {
				found = true
			}
		}
	}
	if !found {
		t.Fatalf("the tool on B did not get A's answer: %+v", msgs.Messages)
	}

	// Stop on A stops B's turn.
	f.fake.Push(providertest.NewOpenAIStream("test-model").ToolCall(0, "call_wait", "waiter", `{}`).Finish("tool_calls").Done().Reply())
	b.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "wait"}, 202, nil)
	sock.until(&last, "part.updated", `"running"`)
	var stopped struct {
		Stopped  bool
		Instance string
	}
	a.call("POST", "/api/sessions/"+ses.ID+"/stop", nil, 200, &stopped)
	if !stopped.Stopped || stopped.Instance != "inst-b" {
		t.Fatalf("stop on A = %+v, want stopped on inst-b", stopped)
	}
	sock.until(&last, "turn.finished", `"stopped"`)
	// Free again: the next turn runs on A.
	f.fake.Push(providertest.OpenAIText("test-model", "On A now."))
	a.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "and now?"}, 202, nil)
	sock.until(&last, "turn.finished", `"done"`)
	for _, s := range []*served{a, b} {
		if err := s.kill(syscall.SIGTERM); err != nil {
			t.Fatalf("stop: %v\n%s", err, s.logs)
		}
	}
}

// kill -9 of the instance running a turn: another seals the turn once its lease expired,
// as a restarted server would, and the session goes on there.
func TestClusterKilledInstanceTurnIsSealedElsewhere(t *testing.T) {
	forEachCluster(t, testClusterKilledInstance)
}

func testClusterKilledInstance(t *testing.T, f *clusterFixture) {
	const ttl = 2 * time.Second
	a := f.start("inst-a", ttl)
	b := f.start("inst-b", ttl)
	var ws store.Workspace
	b.call("POST", "/api/workspaces", map[string]any{"path": f.ws}, 201, &ws)
	var ses store.Session
	b.call("POST", "/api/workspaces/"+ws.ID+"/sessions", map[string]any{"title": "crash"}, 201, &ses)

	f.fake.Push(providertest.NewOpenAIStream("test-model").Text("Starting.").ToolCall(0, "call_wait", "waiter", `{}`).Finish("tool_calls").Done().Reply())
	a.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "work"}, 202, nil)
	a.waitEvent(ses.ID, 0, "part.updated", `"running"`)
	if status, body := b.rawCall("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "me too"}); status != 409 || !strings.Contains(body, "inst-a") {
		t.Fatalf("a turn on B while A runs one: %d %s", status, body)
	}
	killed := time.Now()
	if err := a.kill(syscall.SIGKILL); err == nil {
		t.Fatal("jean2 serve exited cleanly after SIGKILL")
	}
	fin := b.waitEvent(ses.ID, 0, "turn.finished", `"interrupted"`)
	took := time.Since(killed)
	t.Logf("B sealed A's turn %s after kill -9 (lease TTL %s)", took.Round(10*time.Millisecond), ttl)
	if took > time.Minute {
		t.Errorf("sealed %s after the kill: more than the minute the issue allows", took)
	}
	// The line is written once the seal is committed, which the event shows first: it may
	// follow the event by a moment.
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(b.logs.String(), "sealed the turn of an instance that stopped renewing its lease"); {
		if time.Now().After(deadline) {
			t.Errorf("B's log does not say it sealed the turn:\n%s", b.logs)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	var msgs struct{ Messages []store.Message }
	b.call("GET", "/api/sessions/"+ses.ID+"/messages", nil, 200, &msgs)
	for _, m := range msgs.Messages {
		if m.Status == store.StatusStreaming {
			t.Errorf("message %s still streaming after the seal", m.ID)
		}
		for _, p := range m.Parts {
			if p.Status == store.StatusRunning || p.Status == store.StatusPending || p.Status == store.StatusStreaming {
				t.Errorf("part %s (%s) still %s after the seal", p.ID, p.Kind, p.Status)
			}
		}
	}
	if !strings.Contains(fmt.Sprint(msgs.Messages), "Starting.") {
		t.Errorf("the text A streamed before the kill is lost: %+v", msgs.Messages)
	}
	// The session goes on, on B.
	f.fake.Push(providertest.OpenAIText("test-model", "B carries on."))
	b.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "still there?"}, 202, nil)
	b.waitEvent(ses.ID, fin.Seq, "turn.finished", `"done"`)
	if err := b.kill(syscall.SIGTERM); err != nil {
		t.Fatalf("stop: %v\n%s", err, b.logs)
	}
}

func describe(evs []store.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "\n  %d %s %.300s", ev.Seq, ev.Type, ev.Payload)
	}
	return b.String()
}

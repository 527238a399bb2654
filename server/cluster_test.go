package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jean2/jean2/ask"
	"github.com/jean2/jean2/internal/pgtest"
	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/store"
)

// waitTool waits until its call is stopped (or two minutes).
const waitTool = `export const definition = { name: 'wait_it', description: 'Wait until stopped.', inputSchema: { type: 'object' } };
export async function execute(_, ctx) {
  const seen = await new Promise((res) => {
    const t = setTimeout(() => res('timer'), 120000);
    ctx.abortSignal.addEventListener('abort', () => { clearTimeout(t); res('aborted'); });
  });
  return { success: false, error: 'saw ' + seen };
}
`

// clusterOf starts n servers (instances "i0", "i1", …), each with its own home and fake
// model, on one database: a SQLite file they share, or a fresh Postgres database; "lone" is
// one server as jean2 serve runs by default (its own SQLite file, no cluster).
func clusterOf(t testing.TB, n int, backend string, ttl time.Duration) []*fixture {
	t.Helper()
	db := filepath.Join(t.TempDir(), "shared.db")
	if backend == "postgres" {
		db = pgtest.URL(t)
	}
	var out []*fixture
	var ws, tools string
	for i := range n {
		f := newFixture(t)
		f.tools = map[string]string{"wait-it": waitTool, "permit-it": permitTool}
		if backend != "lone" {
			if backend == "postgres" {
				f.cfg.DatabaseURL = db
			} else {
				f.cfg.DBPath = db
			}
			f.cfg.Cluster = ClusterConfig{On: true, Instance: fmt.Sprintf("i%d", i), LeaseTTL: ttl, Poll: 20 * time.Millisecond}
		}
		if i == 0 {
			ws, tools = f.ws, f.cfg.Host.Layout.Tools
		}
		f.ws = ws // one workspace folder, on this one host
		// The same tool folders at the same path, as a deployment ships them: a tool's
		// version (which grants are for) is the same on every instance.
		f.cfg.Host.Layout.Tools = tools
		out = append(out, f.start())
	}
	return out
}

// An instance that fails to renew a turn's lease in time (paused, cut off from the
// database) and finds it taken over stops the turn at once and writes nothing more to the
// session: not its tool's result, not turn.finished. Sealing it is the new holder's job (the
// reaper of the instance that took it over).
func TestClusterLeaseLostStopsTheTurn(t *testing.T) {
	fs := clusterOf(t, 1, "sqlite", 900*time.Millisecond)
	a := fs[0]
	a.fake.Push(providertest.NewOpenAIStream("test-model").ToolCall(0, "call_wait", "wait_it", `{}`).Finish("tool_calls").Done().Reply())
	_, ses := a.session()
	sock := a.dial("/api/sessions/"+ses.ID+"/ws", nil)
	a.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "wait"}, 202, nil)
	var running event
	for {
		ev, _ := sock.until("part.updated", 30*time.Second)
		if strings.Contains(string(ev.Payload), `"running"`) {
			running = ev
			break
		}
	}
	// Another instance took the session over, as its reaper does once the lease expired.
	db := a.srv.Store()
	ctx := context.Background()
	if err := db.ReleaseLease(ctx, ses.ID, "i0"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AcquireLease(ctx, ses.ID, "thief", "", time.Minute); err != nil {
		t.Fatal(err)
	}
	// A's turn stops: once it has, A refuses the next turn naming the holder.
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, body := a.request("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "again"}, nil)
		if status == 409 && strings.Contains(string(body), "thief") {
			break
		}
		if status != 409 || time.Now().After(deadline) {
			t.Fatalf("a turn while another instance holds the session: %d %s", status, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// It wrote nothing after losing the lease.
	if evs, err := db.EventsAfter(ctx, ses.ID, running.Seq, 0); err != nil || len(evs) != 0 {
		t.Fatalf("events A stored after losing its lease: %+v, %v", evs, err)
	}
	// Nor its turn's ledger or undo record (the sealing files them).
	if ls, err := db.ListLedgers(ctx, ses.ID); err != nil || len(ls) != 0 {
		t.Fatalf("ledgers A filed after losing its lease: %+v, %v", ls, err)
	}
	// The thief's lease is left alone: A released nothing it no longer held.
	if l, err := db.LeaseOf(ctx, ses.ID); err != nil || l.InstanceID != "thief" {
		t.Fatalf("lease after A's turn ended: %+v, %v", l, err)
	}
}

// One instance alone is unchanged by the cluster code: no lease is taken, no watcher
// recorded, /api/status says so.
func TestLoneInstanceTakesNoLease(t *testing.T) {
	f := newFixture(t).start()
	f.fake.Push(providertest.OpenAIText("test-model", "hi"))
	_, ses := f.session()
	sock := f.dial("/api/sessions/"+ses.ID+"/ws", nil)
	f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "hello"}, 202, nil)
	sock.until("turn.started", 30*time.Second)
	if _, err := f.srv.Store().LeaseOf(context.Background(), ses.ID); err == nil {
		t.Fatal("a lone instance took a lease")
	}
	sock.until("turn.finished", 30*time.Second)
	var st statusView
	f.call("GET", "/api/status", nil, 200, &st)
	if st.Cluster || st.Instance == "" || st.Database != "sqlite" {
		t.Fatalf("status of a lone instance: %+v", st)
	}
}

// BenchmarkClusterTurns100Sessions runs one turn in each of 100 sessions at once, spread
// over the instances (a turn on instance i%n), each session with a WebSocket subscriber on
// another instance than the one running its turns when there are several (so every event
// crosses instances); the fake model streams 40 chunks. An iteration is the 100 turns;
// turns/s is reported.
//
//	go test ./server -run '^$' -bench ClusterTurns100Sessions -benchtime 5x
func BenchmarkClusterTurns100Sessions(b *testing.B) {
	for _, c := range []struct {
		backend   string
		instances int
	}{{"lone", 1}, {"sqlite", 1}, {"sqlite", 2}, {"postgres", 1}, {"postgres", 2}} {
		b.Run(fmt.Sprintf("%s-%d", c.backend, c.instances), func(b *testing.B) {
			benchClusterTurns(b, c.backend, c.instances)
		})
	}
}

func benchClusterTurns(b *testing.B, backend string, n int) {
	const sessions = 100
	fs := clusterOf(b, n, backend, 0)
	pieces := make([]string, 40)
	for i := range pieces {
		pieces[i] = fmt.Sprintf("word%d ", i)
	}
	for _, f := range fs {
		f.fake.Respond(func(providertest.Request) providertest.Reply {
			return providertest.OpenAIText("test-model", pieces...)
		})
	}
	ids := make([]string, sessions)
	socks := make([]*socket, sessions)
	for i := range ids {
		_, ses := fs[0].session()
		ids[i] = ses.ID
		socks[i] = fs[(i+1)%n].dial("/api/sessions/"+ses.ID+"/ws", nil)
	}
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		var wg sync.WaitGroup
		errs := make(chan error, sessions*2)
		for i := range ids {
			wg.Go(func() {
				status, body := fs[i%n].request("POST", "/api/sessions/"+ids[i]+"/turns", map[string]any{"text": "stream please"}, nil)
				if status != 202 {
					errs <- fmt.Errorf("session %d: start: %d %s", i, status, body)
					return
				}
				if err := awaitFinished(socks[i], 120*time.Second); err != nil {
					errs <- fmt.Errorf("session %d: %w", i, err)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*sessions)/time.Since(start).Seconds(), "turns/s")
}

// BenchmarkClusterFanout measures how long an event takes from its commit on the instance
// running the turn to a WebSocket subscriber: on that instance (local) and on another one
// (remote, through the feed: Postgres notifications, or polling a shared SQLite file every
// 20 ms). An iteration is one turn streaming 40 chunks; p50 and p95 of every event's delay
// (receive time minus the event's createdAt, which has millisecond resolution) are reported.
//
//	go test ./server -run '^$' -bench ClusterFanout -benchtime 20x
func BenchmarkClusterFanout(b *testing.B) {
	for _, backend := range []string{"postgres", "sqlite"} {
		b.Run(backend, func(b *testing.B) { benchClusterFanout(b, backend) })
	}
}

func benchClusterFanout(b *testing.B, backend string) {
	fs := clusterOf(b, 2, backend, 0)
	runner, other := fs[0], fs[1]
	pieces := make([]string, 40)
	for i := range pieces {
		pieces[i] = fmt.Sprintf("word%d ", i)
	}
	runner.fake.Respond(func(providertest.Request) providertest.Reply {
		// Paused between chunks so the harness sends them as separate events.
		s := providertest.NewOpenAIStream("test-model")
		for _, p := range pieces {
			s = s.Text(p).Pause(2 * time.Millisecond)
		}
		return s.Finish("stop").Done().Reply()
	})
	_, ses := runner.session()
	local := runner.dial("/api/sessions/"+ses.ID+"/ws", nil)
	remote := other.dial("/api/sessions/"+ses.ID+"/ws", nil)
	var mu sync.Mutex
	delays := map[string][]float64{}
	b.ResetTimer()
	for range b.N {
		runner.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "stream"}, 202, nil)
		var wg sync.WaitGroup
		for name, s := range map[string]*socket{"local": local, "remote": remote} {
			wg.Go(func() {
				for {
					var data json.RawMessage
					select {
					case data = <-s.frames:
					case <-time.After(60 * time.Second):
						b.Errorf("%s: no turn.finished", name)
						return
					}
					at := time.Now()
					var ev store.Event
					if json.Unmarshal(data, &ev) != nil || ev.Seq == 0 {
						continue
					}
					mu.Lock()
					delays[name] = append(delays[name], float64(at.Sub(ev.CreatedAt).Microseconds())/1000)
					mu.Unlock()
					if ev.Type == "turn.finished" {
						return
					}
				}
			})
		}
		wg.Wait()
	}
	b.StopTimer()
	for _, name := range []string{"local", "remote"} {
		d := delays[name]
		slices.Sort(d)
		if len(d) == 0 {
			b.Fatalf("%s: no events", name)
		}
		b.ReportMetric(d[len(d)/2], name+"-p50-ms")
		b.ReportMetric(d[len(d)*95/100], name+"-p95-ms")
	}
}

// Settings changed through one instance's API apply on the others (read back from the
// database when the server log says they changed).
func TestClusterSettingsChangedOnOneApplyOnAll(t *testing.T) {
	fs := clusterOf(t, 2, "sqlite", 0)
	var st Settings
	fs[0].call("PATCH", "/api/settings", map[string]any{"askTimeoutSeconds": 77, "workRounds": 3, "maxRounds": 9}, 200, &st)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var got Settings
		fs[1].call("GET", "/api/settings", nil, 200, &got)
		if got.AskTimeoutSeconds == 77 && got.WorkRounds == 3 && got.MaxRounds == 9 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance i1 still has %+v", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A grant given on one instance and revoked through another is revoked everywhere: the
// instance that holds it in memory asks again. (Attack: without the cluster's part, the
// revocation on A answered 404 and B went on using the grant.)
func TestClusterGrantRevokedOnOneIsGoneOnAll(t *testing.T) {
	fs := clusterOf(t, 2, "sqlite", 0)
	a, b := fs[0], fs[1]
	_, ses := b.session()
	sock := b.dial("/api/sessions/"+ses.ID+"/ws", nil)
	permit := func() {
		b.fake.Push(providertest.NewOpenAIStream("test-model").ToolCall(0, "call_p", "permit_it", `{"risk":"high"}`).Finish("tool_calls").Done().Reply(),
			providertest.OpenAIText("test-model", "done"))
		b.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "deploy"}, 202, nil)
	}
	permit()
	pending, _ := sock.until("ask.pending", 30*time.Second)
	var ap struct{ Ask struct{ ID string } }
	mustJSON(t, pending.Payload, &ap)
	b.call("POST", "/api/sessions/"+ses.ID+"/asks/"+ap.Ask.ID, map[string]any{"answer": map[string]any{"granted": true, "duration": "workspace"}}, 200, nil)
	sock.until("turn.finished", 30*time.Second)

	// A lists the grant B holds, and revokes it.
	var list struct{ Grants []struct{ ID, Tool string } }
	a.call("GET", "/api/grants", nil, 200, &list)
	if len(list.Grants) != 1 || list.Grants[0].Tool != "permit_it" {
		t.Fatalf("A lists %+v, want the grant given on B", list.Grants)
	}
	a.call("DELETE", "/api/grants/"+list.Grants[0].ID, nil, 204, nil)
	deadline := time.Now().Add(30 * time.Second)
	for {
		b.call("GET", "/api/grants", nil, 200, &list)
		if len(list.Grants) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B still holds %+v after A revoked it", list.Grants)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// B asks again.
	permit()
	ev, _ := sock.until("ask.pending", 30*time.Second)
	if !strings.Contains(string(ev.Payload), "May I deploy?") {
		t.Fatalf("ask.pending: %s", ev.Payload)
	}
}

// A grant given on one instance is used by the others at once: a person who answered "allow
// for this workspace" on A is not asked again when the next turn runs on B. (Attack: B kept
// the grants it loaded at start and asked again until restarted.)
func TestClusterGrantGivenOnOneIsUsedByAll(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) { testClusterGrantGiven(t, backend) })
	}
}

func testClusterGrantGiven(t *testing.T, backend string) {
	fs := clusterOf(t, 2, backend, 0)
	a, b := fs[0], fs[1]
	_, ses := a.session()
	permitOn := func(f *fixture) {
		f.fake.Push(providertest.NewOpenAIStream("test-model").ToolCall(0, "call_p", "permit_it", `{"risk":"high"}`).Finish("tool_calls").Done().Reply(),
			providertest.OpenAIText("test-model", "done"))
		f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "deploy"}, 202, nil)
	}
	sockA := a.dial("/api/sessions/"+ses.ID+"/ws", nil)
	permitOn(a)
	pending, _ := sockA.until("ask.pending", 30*time.Second)
	var ap struct{ Ask struct{ ID string } }
	mustJSON(t, pending.Payload, &ap)
	a.call("POST", "/api/sessions/"+ses.ID+"/asks/"+ap.Ask.ID, map[string]any{"answer": map[string]any{"granted": true, "duration": "workspace"}}, 200, nil)
	finA, _ := sockA.until("turn.finished", 30*time.Second)

	// The next turn, at once, on B: the grant covers its ask.
	sockB := b.dial(fmt.Sprintf("/api/sessions/%s/ws?after=%d", ses.ID, finA.Seq), nil)
	permitOn(b)
	var fin event
	for fin.Type != "turn.finished" {
		mustJSON(t, sockB.next(30*time.Second), &fin)
		if fin.Type == "ask.pending" {
			t.Fatalf("B asked again for what A's grant covers: %s", fin.Payload)
		}
	}
	if !strings.Contains(string(fin.Payload), `"reason":"done"`) {
		t.Fatalf("B's turn: %s", fin.Payload)
	}
	// And the grant is in B's memory (the feed brought it), where file access looks.
	deadline := time.Now().Add(30 * time.Second)
	for !slices.ContainsFunc(b.srv.grants.List(), func(g ask.Grant) bool { return g.Tool == "permit_it" }) {
		if time.Now().After(deadline) {
			t.Fatal("B never took up the grant given on A")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// In a cluster, a turn in a workspace whose folder this instance's disk does not have is
// refused with 421 workspace_elsewhere naming the folder and the instance, before anything
// is stored; a lone instance is unchanged.
func TestClusterTurnNeedsTheWorkspaceFolderHere(t *testing.T) {
	fs := clusterOf(t, 1, "sqlite", 0)
	a := fs[0]
	gone := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.MkdirAll(gone, 0o755); err != nil {
		t.Fatal(err)
	}
	var ws store.Workspace
	a.call("POST", "/api/workspaces", map[string]any{"path": gone}, 201, &ws)
	var ses sessionView
	a.call("POST", "/api/workspaces/"+ws.ID+"/sessions", map[string]any{"title": "t"}, 201, &ses)
	if err := os.Remove(gone); err != nil { // the folder lives on another host's disk
		t.Fatal(err)
	}
	status, body := a.request("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "hi"}, nil)
	if status != 421 || errorCode(t, body) != codeWorkspaceElsewhere || !strings.Contains(string(body), gone) || !strings.Contains(string(body), "i0") {
		t.Fatalf("a turn where the folder is not: %d %s", status, body)
	}
	var msgs struct{ Messages []store.Message }
	a.call("GET", "/api/sessions/"+ses.ID+"/messages", nil, 200, &msgs)
	if len(msgs.Messages) != 0 {
		t.Fatalf("the refused turn stored %d messages", len(msgs.Messages))
	}
}

// The lease goes in the commit that stores turn.finished: a client that heard the end can
// start the next turn on any instance at once, never 409.
func TestClusterLeaseEndsWithTheTurn(t *testing.T) {
	fs := clusterOf(t, 2, "sqlite", 0)
	a, b := fs[0], fs[1]
	_, ses := a.session()
	sock := b.dial("/api/sessions/"+ses.ID+"/ws", nil)
	for i := range 5 {
		f := []*fixture{a, b}[i%2]
		f.fake.Push(providertest.OpenAIText("test-model", "answer"))
		f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "go"}, 202, nil)
		for {
			ev, _ := sock.until("turn.finished", 30*time.Second)
			if strings.Contains(string(ev.Payload), `"done"`) {
				break
			}
		}
		if l, err := a.srv.Store().LeaseOf(context.Background(), ses.ID); err == nil {
			t.Fatalf("turn %d: turn.finished was heard while %s still held the lease", i, l.InstanceID)
		}
	}
}

// While a turn runs on A, B refuses a queued message (the queue lives on A) naming A, and
// the stop frame of a socket on B stops A's turn.
func TestClusterQueueRefusedAndSocketStopCrosses(t *testing.T) {
	fs := clusterOf(t, 2, "sqlite", 0)
	a, b := fs[0], fs[1]
	a.fake.Push(providertest.NewOpenAIStream("test-model").ToolCall(0, "call_wait", "wait_it", `{}`).Finish("tool_calls").Done().Reply())
	_, ses := a.session()
	sock := b.dial("/api/sessions/"+ses.ID+"/ws", nil)
	a.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "wait"}, 202, nil)
	for {
		ev, _ := sock.until("part.updated", 30*time.Second)
		if strings.Contains(string(ev.Payload), `"running"`) {
			break
		}
	}
	status, body := b.request("POST", "/api/sessions/"+ses.ID+"/queue", map[string]any{"text": "after"}, nil)
	if status != 409 || !strings.Contains(string(body), "instance i0") {
		t.Fatalf("a message queued on B while A runs the turn: %d %s", status, body)
	}
	sock.send(map[string]any{"type": "stop", "ref": "s1"})
	// In either order: the turn may end on A, and its turn.finished reach B's socket,
	// before B has written the stop frame's ack.
	got := sock.collect(30*time.Second, "ack", "turn.finished")
	if ack := got["ack"]; ack.Ref != "s1" {
		t.Fatalf("stop frame answered %+v", ack)
	}
	if fin := got["turn.finished"]; !strings.Contains(string(fin.Payload), `"stopped"`) {
		t.Fatalf("turn.finished after B's stop frame: %s", fin.Payload)
	}
}

// Behind a plain round-robin load balancer (no stickiness: each request goes to the next
// instance), everything works: sessions, turns, the socket's events, asks answered
// wherever the answer lands, Stop. A token of the database is valid on every instance.
func TestClusterBehindRoundRobinBalancer(t *testing.T) {
	fs := clusterOf(t, 2, "sqlite", 0)
	a, b := fs[0], fs[1]
	var calls atomic.Int64
	for _, f := range fs {
		f.fake.Respond(func(r providertest.Request) providertest.Reply {
			// A tool result after the person's last message: the call was made this turn.
			var body struct{ Messages []struct{ Role string } }
			_ = json.Unmarshal(r.Body, &body)
			called := false
			for _, m := range body.Messages {
				called = m.Role == "tool" || (called && m.Role != "user")
			}
			if called {
				return providertest.OpenAIText("test-model", "deployed")
			}
			// Call ids are unique in a conversation, as the providers make them.
			id := fmt.Sprintf("call_p%d", calls.Add(1))
			return providertest.NewOpenAIStream("test-model").ToolCall(0, id, "permit_it", `{"risk":"high"}`).Finish("tool_calls").Done().Reply()
		})
	}
	token, err := a.srv.NewToken(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var next atomic.Int64
	targets := []*url.URL{mustURL(t, a.ts.URL), mustURL(t, b.ts.URL)}
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(targets[next.Add(1)%2])
		r.Out.Host = r.In.Host
	}}
	lb := &fixture{t: t, ws: a.ws, token: token, ts: httptest.NewServer(proxy)}
	t.Cleanup(lb.ts.Close)

	_, ses := lb.session()
	sock := lb.dial("/api/sessions/"+ses.ID+"/ws", nil)
	for i := range 4 {
		lb.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "deploy"}, 202, nil)
		pending, _ := sock.until("ask.pending", 30*time.Second)
		var ap struct{ Ask struct{ ID string } }
		mustJSON(t, pending.Payload, &ap)
		lb.call("POST", "/api/sessions/"+ses.ID+"/asks/"+ap.Ask.ID, map[string]any{"answer": true}, 200, nil)
		fin, _ := sock.until("turn.finished", 30*time.Second)
		if !strings.Contains(string(fin.Payload), `"done"`) {
			t.Fatalf("turn %d through the balancer: %s", i, fin.Payload)
		}
	}
	var msgs struct{ Messages []store.Message }
	lb.call("GET", "/api/sessions/"+ses.ID+"/messages", nil, 200, &msgs)
	granted := 0
	for _, m := range msgs.Messages {
		for _, p := range m.Parts {
			if strings.HasPrefix(p.CallID, "call_p") && strings.Contains(string(p.Result), `"granted":true`) {
				granted++
			}
		}
	}
	if granted != 4 {
		t.Fatalf("%d of 4 calls got the answer given through the balancer", granted)
	}
	var st statusView
	seen := map[string]bool{}
	for range 4 {
		lb.call("GET", "/api/status", nil, 200, &st)
		seen[st.Instance] = true
	}
	if !seen["i0"] || !seen["i1"] {
		t.Fatalf("the balancer reached %v, want both instances", seen)
	}
}

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// A provider added, changed or removed through one instance is the one every instance uses
// (the database holds the cluster's providers.json); its key is in no API answer. (Attack:
// each instance kept its own providers.json, and B went on without the provider A added.)
func TestClusterProvidersAreTheSameOnAll(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) { testClusterProviders(t, backend) })
	}
}

func testClusterProviders(t *testing.T, backend string) {
	fs := clusterOf(t, 2, backend, 0)
	a, b := fs[0], fs[1]
	team := providertest.NewOpenAI(t)
	team.Key = "sk-team-secret-8901"
	put := map[string]any{"default": "team", "providers": []map[string]any{
		{"name": "team", "kind": "openai", "baseUrl": team.BaseURL(), "apiKey": team.Key, "model": "team-model"},
	}}
	a.call("PUT", "/api/providers", put, 200, nil)
	waitProviders := func(f *fixture, ok func(providersView) bool) providersView {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			var view providersView
			body := f.call("GET", "/api/providers", nil, 200, &view)
			if strings.Contains(string(body), team.Key) {
				t.Fatalf("GET /api/providers shows the key: %s", body)
			}
			if ok(view) {
				return view
			}
			if time.Now().After(deadline) {
				t.Fatalf("providers on %s: %+v", f.srv.Instance(), view)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	hasTeam := func(model string) func(providersView) bool {
		return func(v providersView) bool {
			return v.Default == "team" && slices.ContainsFunc(v.Providers, func(p providerView) bool { return p.Name == "team" && p.Model == model && p.HasKey })
		}
	}
	waitProviders(b, hasTeam("team-model"))

	// A turn on B goes to the provider added on A, with its key.
	_, ses := b.session()
	sock := b.dial("/api/sessions/"+ses.ID+"/ws", nil)
	team.Push(providertest.OpenAIText("team-model", "from the team"))
	b.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "hi"}, 202, nil)
	fin, _ := sock.until("turn.finished", 30*time.Second)
	if !strings.Contains(string(fin.Payload), `"done"`) || len(team.Requests()) != 1 {
		t.Fatalf("turn on B: %s; the team provider got %d requests", fin.Payload, len(team.Requests()))
	}

	// Changed through B without its key (kept), seen on A; then removed through B.
	put["providers"].([]map[string]any)[0]["apiKey"] = ""
	put["providers"].([]map[string]any)[0]["model"] = "team-2"
	b.call("PUT", "/api/providers", put, 200, nil)
	waitProviders(a, hasTeam("team-2"))
	team.Push(providertest.OpenAIText("team-2", "again"))
	_, sesA := a.session()
	sockA := a.dial("/api/sessions/"+sesA.ID+"/ws", nil)
	a.call("POST", "/api/sessions/"+sesA.ID+"/turns", map[string]any{"text": "hi"}, 202, nil)
	if fin, _ := sockA.until("turn.finished", 30*time.Second); !strings.Contains(string(fin.Payload), `"done"`) || len(team.Requests()) != 2 {
		t.Fatalf("turn on A after B's edit: %s; the team provider got %d requests", fin.Payload, len(team.Requests()))
	}
	b.call("PUT", "/api/providers", map[string]any{"default": "openai", "providers": []map[string]any{}}, 200, nil)
	waitProviders(a, func(v providersView) bool {
		return v.Default == "openai" && !slices.ContainsFunc(v.Providers, func(p providerView) bool { return p.Name == "team" })
	})
}

// At start, the first instance's providers.json becomes the cluster's; an instance that
// joins with a providers.json of its own uses the cluster's, and keeps its own aside
// (nothing a person wrote is lost).
func TestClusterJoiningInstanceTakesTheClustersProviders(t *testing.T) {
	db := filepath.Join(t.TempDir(), "shared.db")
	first, second := providertest.NewOpenAI(t), providertest.NewOpenAI(t)
	var fs []*fixture
	for i, p := range []*providertest.Server{first, second} {
		f := newFixture(t)
		f.tools = nil
		f.cfg.DBPath = db
		f.cfg.Cluster = ClusterConfig{On: true, Instance: fmt.Sprintf("i%d", i), Poll: 20 * time.Millisecond}
		file := provider.File{Default: "mine", Providers: []provider.FileEntry{{Name: "mine", Kind: provider.KindOpenAI, BaseURL: p.BaseURL(), APIKey: fmt.Sprintf("sk-mine-%d", i), Model: fmt.Sprintf("model-%d", i)}}}
		if err := provider.WriteFile(f.home, file); err != nil {
			t.Fatal(err)
		}
		fs = append(fs, f.start())
	}
	var view providersView
	fs[1].call("GET", "/api/providers", nil, 200, &view)
	if view.Default != "mine" || view.Providers[0].Model != "model-0" || view.Providers[0].BaseURL != first.BaseURL() {
		t.Fatalf("the joining instance uses %+v, want the first one's providers", view)
	}
	aside, _ := filepath.Glob(filepath.Join(fs[1].home, provider.FileName+".before-*"))
	if len(aside) != 1 {
		t.Fatalf("kept aside: %v", aside)
	}
	data, err := os.ReadFile(aside[0])
	if fi, _ := os.Stat(aside[0]); err != nil || !strings.Contains(string(data), "sk-mine-1") || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %s, %v", aside[0], data, err)
	}
	if aside, _ := filepath.Glob(filepath.Join(fs[0].home, provider.FileName+".before-*")); len(aside) != 0 {
		t.Fatalf("the first instance kept aside %v", aside)
	}
}

package server

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/internal/pgtest"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/schedule"
	"github.com/jean2/jean2/store"
)

// scheduleJSON is a schedule as the API returns it.
type scheduleJSON struct {
	ID          string              `json:"id"`
	WorkspaceID string              `json:"workspaceId"`
	Cron        string              `json:"cron"`
	TimeZone    string              `json:"timeZone"`
	CatchUp     string              `json:"catchUp"`
	Paused      bool                `json:"paused"`
	NextRunAt   *time.Time          `json:"nextRunAt"`
	Policy      schedule.Policy     `json:"policy"`
	Runs        []store.ScheduleRun `json:"runs"`
}

// withFakeClock gives the fixture's scheduler a fake clock standing at now.
func (f *fixture) withFakeClock(c *schedule.FakeClock) *fixture {
	f.cfg.Schedules = ScheduleConfig{Clock: c, Poll: 30 * time.Second}
	return f
}

// waitRuns polls the schedule until it has n runs that are no longer running.
func (f *fixture) waitRuns(id string, n int) scheduleJSON {
	f.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		var sc scheduleJSON
		f.call("GET", "/api/schedules/"+id, nil, 200, &sc)
		finished := 0
		for _, r := range sc.Runs {
			if r.Status != store.RunRunning {
				finished++
			}
		}
		if finished >= n {
			return sc
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("schedule %s: %d finished runs, want %d: %+v", id, finished, n, sc.Runs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The API refuses what cannot be run, saying what is wrong: a bad cron, an unknown zone, an
// unknown workspace, a bad catch-up or rule; it keeps the rest, pauses and resumes.
func TestScheduleAPIValidates(t *testing.T) {
	clock := schedule.NewFakeClock(time.Date(2026, 1, 5, 7, 0, 0, 0, time.UTC))
	f := newFixture(t).withFakeClock(clock).start()
	ws, _ := f.session()
	good := map[string]any{"workspaceId": ws.ID, "prompt": "Summarize", "cron": "0 9 * * 1-5", "timeZone": "Europe/Paris"}
	with := func(k string, v any) map[string]any {
		out := map[string]any{}
		for kk, vv := range good {
			out[kk] = vv
		}
		out[k] = v
		return out
	}
	for _, tc := range []struct {
		body map[string]any
		want string
	}{
		{with("cron", "0 9 * *"), `cron "0 9 * *": expected exactly 5 fields`},
		{with("cron", "61 * * * *"), `cron "61 * * * *"`},
		{with("cron", "@every 5m"), "@every is not supported"},
		{with("timeZone", "Mars/Olympus"), `time zone "Mars/Olympus" is not an IANA zone name`},
		{with("timeZone", ""), "time zone is empty"},
		{with("workspaceId", "wsp_nope"), "workspace wsp_nope not found"},
		{with("catchUp", "twice"), `catchUp "twice" is not once or skip`},
		{with("policy", map[string]any{"allow": []string{"[x"}}), "policy.allow[0]"},
		{with("policy", map[string]any{"grant": []string{"*"}}), `unknown field "grant"`},
		{with("prompt", "  "), "prompt is empty"},
		{with("provider", "nope"), `provider "nope" is not configured`},
	} {
		status, body := f.request("POST", "/api/schedules", tc.body, nil)
		var e struct{ Error struct{ Message string } }
		_ = json.Unmarshal(body, &e)
		if status != 400 || !strings.Contains(e.Error.Message, tc.want) {
			t.Errorf("POST %v: %d %s, want 400 with %q", tc.body, status, body, tc.want)
		}
	}
	var sc scheduleJSON
	f.call("POST", "/api/schedules", with("policy", map[string]any{"allow": []string{"permit_*"}}), 201, &sc)
	// 09:00 in Paris is 08:00 UTC in winter; the clock is at 07:00 UTC on a Monday.
	if sc.CatchUp != "once" || sc.NextRunAt == nil || !sc.NextRunAt.Equal(time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC)) ||
		len(sc.Policy.Allow) != 1 || len(sc.Runs) != 0 {
		t.Fatalf("created: %+v (next %v)", sc, sc.NextRunAt)
	}
	var list struct{ Schedules []scheduleJSON }
	f.call("GET", "/api/schedules?workspace="+ws.ID, nil, 200, &list)
	if len(list.Schedules) != 1 || list.Schedules[0].ID != sc.ID {
		t.Fatalf("listed: %+v", list)
	}
	f.call("POST", "/api/schedules/"+sc.ID+"/pause", nil, 200, &sc)
	if !sc.Paused || sc.NextRunAt != nil {
		t.Fatalf("paused: %+v", sc)
	}
	// Resumed a day later, it runs from then on, not for the occurrences it was paused over.
	clock.Advance(24 * time.Hour)
	f.call("POST", "/api/schedules/"+sc.ID+"/resume", nil, 200, &sc)
	if sc.Paused || sc.NextRunAt == nil || !sc.NextRunAt.Equal(time.Date(2026, 1, 6, 8, 0, 0, 0, time.UTC)) {
		t.Fatalf("resumed: %+v (next %v)", sc, sc.NextRunAt)
	}
	status, body := f.request("PATCH", "/api/schedules/"+sc.ID, map[string]any{"cron": "@hourly", "timeZone": "Asia/Kolkata"}, nil)
	if status != 200 || !strings.Contains(string(body), `"cron":"@hourly"`) {
		t.Fatalf("PATCH: %d %s", status, body)
	}
	f.call("PATCH", "/api/schedules/"+sc.ID, map[string]any{"cron": "bad"}, 400, nil)
	f.call("DELETE", "/api/schedules/"+sc.ID, nil, 204, nil)
	f.call("GET", "/api/schedules/"+sc.ID, nil, 404, nil)
}

// A schedule fires when the (fake) clock reaches its occurrence: the run is an ordinary
// session of the workspace, titled after the schedule and naming it; its asks are answered
// by the schedule's policy at once, and the one it does not cover is refused and reported.
func TestScheduleRunsOnItsOccurrence(t *testing.T) {
	clock := schedule.NewFakeClock(time.Date(2026, 1, 5, 7, 59, 0, 0, time.UTC))
	f := newFixture(t).withFakeClock(clock).start()
	ws, _ := f.session()
	f.fake.Push(
		providertest.NewOpenAIStream("test-model").
			ToolCall(0, "call_p", "permit_it", `{}`).
			ToolCall(1, "call_c", "confirm_it", `{"question":"Ship it?"}`).Finish("tool_calls").Done().Reply(),
		providertest.OpenAIText("test-model", "Deployed; ", "not confirmed."),
	)
	var sc scheduleJSON
	f.call("POST", "/api/schedules", map[string]any{"workspaceId": ws.ID, "name": "Nightly", "prompt": "Deploy",
		"cron": "0 9 * * *", "timeZone": "Europe/Paris", "policy": map[string]any{"allow": []string{"permit_*:deploy"}}}, 201, &sc)

	clock.Set(time.Date(2026, 1, 5, 7, 59, 59, 0, time.UTC))
	time.Sleep(100 * time.Millisecond)
	if n := len(f.fake.Requests()); n != 0 {
		t.Fatalf("the model was called %d times before the occurrence", n)
	}
	start := time.Now()
	clock.Set(time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC))
	sc = f.waitRuns(sc.ID, 1)
	t.Logf("the run finished %v after the clock reached its occurrence", time.Since(start).Round(time.Millisecond))
	run := sc.Runs[0]
	var refusals []map[string]any
	mustJSON(t, run.Refusals, &refusals)
	if run.Status != schedule.StatusRefused || run.Reason != "done" || run.Covers != 1 ||
		!run.OccurrenceAt.Equal(time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC)) || len(refusals) != 1 ||
		refusals[0]["tool"] != "confirm_it" || !strings.Contains(fmt.Sprint(refusals[0]["reason"]), "no allow rule or policy.answers entry covers it") {
		t.Fatalf("run: %+v refusals %s", run, run.Refusals)
	}
	if !sc.NextRunAt.Equal(time.Date(2026, 1, 6, 8, 0, 0, 0, time.UTC)) {
		t.Fatalf("next run at %v", sc.NextRunAt)
	}
	// The session is listed in its workspace with its schedule, and its transcript shows the
	// grant and the refusal as the tools saw them.
	var sessions struct {
		Sessions []sessionView `json:"sessions"`
	}
	f.call("GET", "/api/workspaces/"+ws.ID+"/sessions", nil, 200, &sessions)
	var ses *sessionView
	for i := range sessions.Sessions {
		if sessions.Sessions[i].ID == run.SessionID {
			ses = &sessions.Sessions[i]
		}
	}
	if ses == nil || ses.Schedule == nil || ses.Schedule.ID != sc.ID || ses.Schedule.Name != "Nightly" ||
		!strings.HasPrefix(ses.Title, "Nightly · 2026-01-05 09:00 CET") {
		t.Fatalf("the run's session as listed: %+v", ses)
	}
	var one sessionView
	f.call("GET", "/api/sessions/"+run.SessionID, nil, 200, &one)
	if one.Schedule == nil || one.Schedule.ID != sc.ID || one.Schedule.Status != schedule.StatusRefused || !one.Schedule.OccurrenceAt.Equal(run.OccurrenceAt) {
		t.Fatalf("the run's session read alone: %+v", one.Schedule)
	}
	for _, other := range sessions.Sessions {
		if other.ID != run.SessionID && other.Schedule != nil {
			t.Fatalf("a session no schedule started names one: %+v", other)
		}
	}
	reqs := f.fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	second := string(reqs[1].Body)
	if !strings.Contains(second, `\"granted\":true`) || !strings.Contains(second, "refused by the client") {
		t.Fatalf("the model did not see the grant and the refusal: %s", second)
	}
}

// Occurrences missed while jean2 was down are caught up at start as the schedule says:
// "once" runs one session standing for all of them, "skip" records them skipped and runs
// nothing; then both go on at their next occurrence.
func TestScheduleCatchUpAtStart(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	clock := schedule.NewFakeClock(t0)
	f := newFixture(t).withFakeClock(clock).start()
	ws, _ := f.session()
	var once, skip scheduleJSON
	f.call("POST", "/api/schedules", map[string]any{"workspaceId": ws.ID, "prompt": "Once", "cron": "@hourly", "timeZone": "UTC"}, 201, &once)
	f.call("POST", "/api/schedules", map[string]any{"workspaceId": ws.ID, "prompt": "Skip", "cron": "@hourly", "timeZone": "UTC", "catchUp": "skip"}, 201, &skip)
	f.stop()

	// Down from 10:00 to 15:30: the occurrences of 11:00 … 15:00 were missed.
	clock.Set(t0.Add(5*time.Hour + 30*time.Minute))
	f.fake.Push(providertest.OpenAIText("test-model", "caught up"))
	f.start()
	got := f.waitRuns(once.ID, 1)
	if r := got.Runs[0]; len(got.Runs) != 1 || r.Status != schedule.StatusDone || r.Covers != 5 || r.SessionID == "" ||
		!r.OccurrenceAt.Equal(t0.Add(5*time.Hour)) {
		t.Fatalf("catch-up once: %+v", got.Runs)
	}
	got = f.waitRuns(skip.ID, 1)
	if r := got.Runs[0]; len(got.Runs) != 1 || r.Status != store.RunSkipped || r.Covers != 5 || r.SessionID != "" {
		t.Fatalf("catch-up skip: %+v", got.Runs)
	}
	if n := len(f.fake.Requests()); n != 1 {
		t.Fatalf("%d model requests, want the one catch-up run's", n)
	}
	// Both run at 16:00, on time.
	f.fake.Push(providertest.OpenAIText("test-model", "a"), providertest.OpenAIText("test-model", "b"))
	clock.Set(t0.Add(6 * time.Hour))
	for _, id := range []string{once.ID, skip.ID} {
		got = f.waitRuns(id, 2)
		if r := got.Runs[0]; r.Status != schedule.StatusDone || r.Covers != 1 || !r.OccurrenceAt.Equal(t0.Add(6*time.Hour)) {
			t.Fatalf("schedule %s at 16:00: %+v", id, got.Runs)
		}
	}
}

// scheduleClusterOf is clusterOf with every instance's scheduler on one fake clock.
func scheduleClusterOf(t *testing.T, backend string, clock *schedule.FakeClock) []*fixture {
	t.Helper()
	db := filepath.Join(t.TempDir(), "shared.db")
	if backend == "postgres" {
		db = pgtest.URL(t)
	}
	var out []*fixture
	var ws, tools string
	for i := range 2 {
		f := newFixture(t).withFakeClock(clock)
		if backend == "postgres" {
			f.cfg.DatabaseURL = db
		} else {
			f.cfg.DBPath = db
		}
		f.cfg.Cluster = ClusterConfig{On: true, Instance: fmt.Sprintf("i%d", i), Poll: 20 * time.Millisecond}
		if i == 0 {
			ws, tools = f.ws, f.cfg.Host.Layout.Tools
		}
		f.ws, f.cfg.Host.Layout.Tools = ws, tools
		out = append(out, f.start())
	}
	return out
}

// Two instances on one database, woken by the same clock at every occurrence: each
// occurrence is claimed by exactly one of them, which runs it (one session, one model call).
func TestScheduleOneInstanceRunsEachOccurrence(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
			clock := schedule.NewFakeClock(t0)
			fs := scheduleClusterOf(t, backend, clock)
			const n = 10
			for _, f := range fs {
				for range n {
					f.fake.Push(providertest.OpenAIText("test-model", "tick"))
				}
			}
			ws, _ := fs[0].session()
			var sc scheduleJSON
			fs[0].call("POST", "/api/schedules", map[string]any{"workspaceId": ws.ID, "prompt": "Tick", "cron": "* * * * *", "timeZone": "UTC"}, 201, &sc)
			for i := 1; i <= n; i++ {
				clock.Set(t0.Add(time.Duration(i) * time.Minute))
				fs[i%2].waitRuns(sc.ID, i)
			}
			got := fs[1].waitRuns(sc.ID, n)
			sessions, by := map[string]bool{}, map[string]int{}
			for _, r := range got.Runs {
				if r.Status != schedule.StatusDone || r.SessionID == "" || sessions[r.SessionID] {
					t.Fatalf("runs: %+v", got.Runs)
				}
				sessions[r.SessionID] = true
				by[r.InstanceID]++
			}
			calls := len(fs[0].fake.Requests()) + len(fs[1].fake.Requests())
			t.Logf("%s: %d occurrences, runs by instance %v, model calls %d", backend, n, by, calls)
			if len(got.Runs) != n || calls != n {
				t.Fatalf("%d runs and %d model calls for %d occurrences: %+v", len(got.Runs), calls, n, got.Runs)
			}
		})
	}
}

// A run whose turn is running when the server closes ends with it: the turn is stopped and
// the run recorded failed, not left running.
func TestScheduleRunEndsWithTheServer(t *testing.T) {
	t0 := time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC)
	clock := schedule.NewFakeClock(t0.Add(-time.Minute))
	f := newFixture(t).withFakeClock(clock).start()
	ws, _ := f.session()
	f.fake.Push(providertest.NewOpenAIStream("test-model").Text("thinking…").Pause(time.Minute).Text("late").Finish("stop").Done().Reply())
	var sc scheduleJSON
	f.call("POST", "/api/schedules", map[string]any{"workspaceId": ws.ID, "prompt": "Slow", "cron": "0 8 * * *", "timeZone": "UTC"}, 201, &sc)
	clock.Set(t0)
	deadline := time.Now().Add(30 * time.Second)
	for len(f.fake.Requests()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the run did not call the model")
		}
		time.Sleep(10 * time.Millisecond)
	}
	db := filepath.Join(f.home, DBFile)
	start := time.Now()
	f.stop()
	t.Logf("the server closed %v after a run's turn was stopped", time.Since(start).Round(time.Millisecond))
	st, err := store.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.ScheduleRuns(t.Context(), sc.ID, 0)
	if err != nil || len(runs) != 1 || runs[0].Status != schedule.StatusFailed || runs[0].FinishedAt.IsZero() {
		t.Fatalf("the run after the server closed: %+v %v", runs, err)
	}
	t.Logf("recorded: status %s, reason %q, error %q", runs[0].Status, runs[0].Reason, runs[0].Error)
}

// A deny rule refuses a permission at once: the tool is told "not granted", the run is
// refused and says which rule.
func TestScheduleDenyRuleRefusesAPermission(t *testing.T) {
	clock := schedule.NewFakeClock(time.Date(2026, 1, 5, 7, 59, 0, 0, time.UTC))
	f := newFixture(t).withFakeClock(clock).start()
	ws, _ := f.session()
	f.fake.Push(providertest.OpenAIToolCall("test-model", "call_p", "permit_it", `{}`), providertest.OpenAIText("test-model", "Not deployed."))
	var sc scheduleJSON
	f.call("POST", "/api/schedules", map[string]any{"workspaceId": ws.ID, "prompt": "Deploy", "cron": "0 8 * * *", "timeZone": "UTC",
		"policy": map[string]any{"allow": []string{"*"}, "deny": []string{"permit_*"}}}, 201, &sc)
	clock.Set(time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC))
	run := f.waitRuns(sc.ID, 1).Runs[0]
	if run.Status != schedule.StatusRefused || !strings.Contains(string(run.Refusals), `"reason":"denied by deny permit_*"`) {
		t.Fatalf("run: %+v refusals %s", run, run.Refusals)
	}
	if second := string(f.fake.Requests()[1].Body); !strings.Contains(second, `\"granted\":false`) {
		t.Fatalf("the tool was not told the permission was refused: %s", second)
	}
}

// A schedule names the agent its runs' sessions use, checked as a session's is: the plan
// agent's run is a plan session; a name no agent has is refused.
func TestScheduleRunsWithItsAgent(t *testing.T) {
	clock := schedule.NewFakeClock(time.Date(2026, 1, 5, 7, 59, 0, 0, time.UTC))
	f := newFixture(t).withFakeClock(clock).start()
	ws, _ := f.session()
	var bad map[string]any
	f.call("POST", "/api/schedules", map[string]any{"workspaceId": ws.ID, "prompt": "Plan", "cron": "0 8 * * *",
		"timeZone": "UTC", "agent": "no-such-agent"}, 400, &bad)
	if !strings.Contains(fmt.Sprint(bad), "no-such-agent") {
		t.Fatalf("an unknown agent: %v", bad)
	}
	f.fake.Push(providertest.OpenAIText("test-model", "A plan."))
	var sc scheduleJSON
	f.call("POST", "/api/schedules", map[string]any{"workspaceId": ws.ID, "prompt": "Plan", "cron": "0 8 * * *",
		"timeZone": "UTC", "agent": "plan"}, 201, &sc)
	clock.Set(time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC))
	sc = f.waitRuns(sc.ID, 1)
	var one sessionView
	f.call("GET", "/api/sessions/"+sc.Runs[0].SessionID, nil, 200, &one)
	if one.Agent != "plan" {
		t.Fatalf("the run's session runs with agent %q, want plan", one.Agent)
	}
}

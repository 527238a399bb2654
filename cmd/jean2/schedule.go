package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jean2/jean2/chat"
	"github.com/jean2/jean2/store"
)

const scheduleUsage = `Usage:
  jean2 schedule add --cron EXPR [--tz ZONE] [flags] "PROMPT"   send PROMPT on a schedule
  jean2 schedule list [--workspace DIR | --all] [--json]       the schedules, next run, last run
  jean2 schedule show ID [--json]                               a schedule and its recent runs
  jean2 schedule pause ID | resume ID                           stop and start its runs
  jean2 schedule rm ID                                          delete it (its sessions stay)

A scheduled prompt runs as a new session of its workspace at each occurrence, on the running
jean2 server (jean2 serve), with no person: its tools' asks are answered by the policy the
flags give, as jean2 run's are, and what it does not cover is refused and reported with the
run (docs/automation.md, "Scheduled sessions").

Flags of add:
  --cron EXPR        5 fields (minute hour day-of-month month day-of-week), or @hourly,
                     @daily, @weekly, @monthly, @yearly: "0 9 * * 1-5" is 09:00 on weekdays
  --tz ZONE          the IANA time zone the cron reads in (default: $TZ, else this machine's)
  --workspace DIR    the folder the runs work in (default: the current folder)
  --name NAME        what the runs' sessions are titled after (default: the prompt's start)
  --provider NAME, --model MODEL   the runs' model (default: the server's)
  --agent NAME       the agent the runs' sessions use (default: build)
  --allow RULE, --deny RULE, --answers FILE   the ask policy, as jean2 run's
  --catch-up once|skip   after jean2 was down: one run for the occurrences missed (once, the
                     default) or none (skip)
  --paused           add it paused
  --server URL       the jean2 server (default: as jean2 chat finds it)
`

// runSchedule runs `jean2 schedule`.
func runSchedule(ctx context.Context, e env, args []string) error {
	if len(args) == 0 || wantsHelp(args[:1]) {
		fmt.Fprint(e.stdout, scheduleUsage)
		return nil
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "add":
		return scheduleAdd(ctx, e, rest)
	case "list", "ls":
		return scheduleList(ctx, e, rest)
	case "show":
		return scheduleShow(ctx, e, rest)
	case "pause", "resume":
		return scheduleAct(ctx, e, sub, rest)
	case "rm", "remove", "delete":
		return scheduleAct(ctx, e, "rm", rest)
	}
	return usagef("unknown command jean2 schedule %q\n\n%s", sub, scheduleUsage)
}

// scheduleClient finds the server as jean2 chat does; schedules live in a running one.
func scheduleClient(e env, serverFlag string) (*chat.Client, error) {
	base, _, err := serverBase(e, serverFlag)
	if err != nil {
		return nil, err
	}
	if err := chat.CheckServerURL(base); err != nil {
		return nil, usagef("--server %s: %v", base, err)
	}
	token, err := clientToken(e)
	if err != nil {
		return nil, err
	}
	return chat.NewClient(base, token), nil
}

// scheduleCall calls the API and says what failed: a refusal of the server as itself, no
// server as the way to start one.
func scheduleCall(ctx context.Context, api *chat.Client, method, path string, in, out any) error {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := api.Call(cctx, method, path, in, out)
	var ae *chat.APIError
	switch {
	case errors.As(err, &ae) && ae.Status == http.StatusBadRequest:
		return usageError{ae.Message}
	case errors.As(err, &ae):
		return err
	case err != nil:
		return fmt.Errorf("no jean2 server answers at %s: %w (schedules run in the server: start it with jean2 serve)", api.Base(), err)
	}
	return nil
}

// addFlags are jean2 schedule add's flags.
type addFlags struct {
	cron, tz, workspace, name, provider, model, agent, answers, catchUp, server string
	paused                                                                      bool
	allow, deny                                                                 ruleList
}

func parseAddFlags(e env, args []string) (f addFlags, prompt string, help bool, err error) {
	fs := newFlags("schedule add", e)
	for name, p := range map[string]*string{"cron": &f.cron, "tz": &f.tz, "workspace": &f.workspace, "name": &f.name,
		"provider": &f.provider, "model": &f.model, "agent": &f.agent, "answers": &f.answers, "catch-up": &f.catchUp, "server": &f.server} {
		fs.StringVar(p, name, "", "")
	}
	fs.BoolVar(&f.paused, "paused", false, "")
	fs.Var(&f.allow, "allow", "")
	fs.Var(&f.deny, "deny", "")
	pos, help, err := parseMixed(fs, e, args, scheduleUsage)
	if help || err != nil {
		return f, "", help, err
	}
	switch {
	case f.cron == "":
		return f, "", false, usagef("jean2 schedule add needs --cron (\"0 9 * * 1-5\", @daily …)\n\n%s", scheduleUsage)
	case len(pos) > 1:
		return f, "", false, usagef("jean2 schedule add takes one prompt (quote it), got %d arguments", len(pos))
	}
	prompt, err = runPrompt(e, pos)
	return f, prompt, false, err
}

func scheduleAdd(ctx context.Context, e env, args []string) error {
	f, prompt, help, err := parseAddFlags(e, args)
	if help || err != nil {
		return err
	}
	body, err := addBody(e, f, prompt)
	if err != nil {
		return err
	}
	api, err := scheduleClient(e, f.server)
	if err != nil {
		return err
	}
	ws, err := scheduleWorkspace(ctx, api, f.workspace, true)
	if err != nil {
		return err
	}
	body["workspaceId"] = ws.ID
	var sc scheduleOut
	if err := scheduleCall(ctx, api, http.MethodPost, "/api/schedules", body, &sc); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "schedule %s added: %q in %s for %s; %s\n", sc.ID, sc.Cron, sc.TimeZone, ws.Path, sc.next())
	return nil
}

// addBody is the API body of jean2 schedule add's flags.
func addBody(e env, f addFlags, prompt string) (map[string]any, error) {
	tz := f.tz
	if tz == "" {
		if tz = localZone(e); tz == "" {
			return nil, usagef("this machine's time zone is not known: give --tz (an IANA zone such as Europe/Paris, or UTC)")
		}
	}
	policy := map[string]any{"allow": ruleTexts(f.allow), "deny": ruleTexts(f.deny)}
	if f.answers != "" {
		data, err := os.ReadFile(f.answers)
		if err != nil {
			return nil, usagef("--answers: %v", err)
		}
		if !json.Valid(data) {
			return nil, usagef("--answers %s is not JSON", f.answers)
		}
		policy["answers"] = json.RawMessage(data)
	}
	body := map[string]any{"prompt": prompt, "cron": f.cron, "timeZone": tz, "name": f.name,
		"provider": f.provider, "model": f.model, "policy": policy, "paused": f.paused}
	if f.agent != "" {
		body["agent"] = f.agent
	}
	if f.catchUp != "" {
		body["catchUp"] = f.catchUp
	}
	return body, nil
}

func ruleTexts(l ruleList) []string {
	out := make([]string, len(l))
	for i, r := range l {
		out[i] = r.Text
	}
	return out
}

// localZone is the IANA name of this machine's zone: $TZ, else where /etc/localtime leads.
func localZone(e env) string {
	if tz := strings.TrimPrefix(e.getenv("TZ"), ":"); tz != "" {
		return tz
	}
	target, err := filepath.EvalSymlinks("/etc/localtime")
	if _, zone, ok := strings.Cut(target, "zoneinfo/"); err == nil && ok {
		return zone
	}
	return ""
}

// scheduleWorkspace is the server's workspace of dir (the current folder when ""), made
// when create is set and there is none.
func scheduleWorkspace(ctx context.Context, api *chat.Client, dir string, create bool) (store.Workspace, error) {
	if dir == "" {
		dir = workingDir()
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return store.Workspace{}, usagef("--workspace %s: %v", dir, err)
	}
	var list struct {
		Workspaces []store.Workspace `json:"workspaces"`
	}
	if err := scheduleCall(ctx, api, http.MethodGet, "/api/workspaces", nil, &list); err != nil {
		return store.Workspace{}, err
	}
	real, _ := filepath.EvalSymlinks(abs)
	for _, w := range list.Workspaces {
		if p := filepath.Clean(w.Path); p == abs || p == real {
			return w, nil
		}
	}
	if !create {
		return store.Workspace{}, usagef("%s is not a workspace of the server (jean2 schedule add makes it one)", abs)
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return store.Workspace{}, usagef("--workspace %s is not a folder", dir)
	}
	var w store.Workspace
	if err := scheduleCall(ctx, api, http.MethodPost, "/api/workspaces", map[string]any{"path": abs}, &w); err != nil {
		return w, fmt.Errorf("make %s a workspace: %w", abs, err)
	}
	return w, nil
}

// scheduleOut is a schedule as the API shows it.
type scheduleOut struct {
	ID          string              `json:"id"`
	WorkspaceID string              `json:"workspaceId"`
	Name        string              `json:"name"`
	Prompt      string              `json:"prompt"`
	Cron        string              `json:"cron"`
	TimeZone    string              `json:"timeZone"`
	CatchUp     string              `json:"catchUp"`
	Paused      bool                `json:"paused"`
	NextRunAt   *time.Time          `json:"nextRunAt"`
	Policy      json.RawMessage     `json:"policy"`
	Runs        []store.ScheduleRun `json:"runs"`
}

// next says when it runs next, on its zone's clock.
func (s scheduleOut) next() string {
	if s.Paused || s.NextRunAt == nil {
		return "paused"
	}
	return "next run " + s.inZone(*s.NextRunAt)
}

func (s scheduleOut) inZone(t time.Time) string {
	if loc, err := time.LoadLocation(s.TimeZone); err == nil {
		t = t.In(loc)
	}
	return t.Format("2006-01-02 15:04 MST")
}

// title is the schedule's name, or the start of its prompt.
func (s scheduleOut) title() string {
	t := s.Name
	if t == "" {
		t, _, _ = strings.Cut(strings.TrimSpace(s.Prompt), "\n")
	}
	if r := []rune(t); len(r) > 40 {
		t = string(r[:40]) + "…"
	}
	return t
}

// lastRun says how its latest run ended.
func (s scheduleOut) lastRun() string {
	if len(s.Runs) == 0 {
		return "-"
	}
	r := s.Runs[0]
	out := r.Status + " " + s.inZone(r.OccurrenceAt)
	if r.Covers > 1 {
		out += fmt.Sprintf(" (%d occurrences)", r.Covers)
	}
	return out
}

func scheduleList(ctx context.Context, e env, args []string) error {
	fs := newFlags("schedule list", e)
	serverFlag := fs.String("server", "", "")
	workspace := fs.String("workspace", "", "")
	all := fs.Bool("all", false, "")
	asJSON := fs.Bool("json", false, "")
	if help, err := parseFlags(fs, e, args, scheduleUsage, ""); help || err != nil {
		return err
	}
	api, err := scheduleClient(e, *serverFlag)
	if err != nil {
		return err
	}
	path := "/api/schedules"
	if !*all {
		ws, err := scheduleWorkspace(ctx, api, *workspace, false)
		if err != nil {
			return err
		}
		path += "?workspace=" + url.QueryEscape(ws.ID)
	}
	var out struct {
		Schedules []scheduleOut `json:"schedules"`
	}
	if err := scheduleCall(ctx, api, http.MethodGet, path, nil, &out); err != nil {
		return err
	}
	if *asJSON {
		return writeJSONOut(e.stdout, out)
	}
	if len(out.Schedules) == 0 {
		fmt.Fprintln(e.stdout, "no schedules (jean2 schedule add --cron … \"PROMPT\" makes one)")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tCRON\tZONE\tNEXT\tLAST RUN")
	for _, s := range out.Schedules {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.title(), s.Cron, s.TimeZone, strings.TrimPrefix(s.next(), "next run "), s.lastRun())
	}
	return tw.Flush()
}

func writeJSONOut(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// scheduleID parses the flags of a command on one schedule and returns its id.
func scheduleID(e env, name string, args []string) (id, server string, asJSON, help bool, err error) {
	fs := newFlags("schedule "+name, e)
	serverFlag := fs.String("server", "", "")
	jsonFlag := fs.Bool("json", false, "")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		if wantsHelp(args) {
			fmt.Fprint(e.stdout, scheduleUsage)
			return "", "", false, true, nil
		}
		return "", "", false, false, err
	}
	if len(pos) != 1 {
		return "", "", false, false, usagef("jean2 schedule %s takes one schedule id (jean2 schedule list shows them)", name)
	}
	return pos[0], *serverFlag, *jsonFlag, false, nil
}

func scheduleShow(ctx context.Context, e env, args []string) error {
	id, server, asJSON, help, err := scheduleID(e, "show", args)
	if help || err != nil {
		return err
	}
	api, err := scheduleClient(e, server)
	if err != nil {
		return err
	}
	var sc scheduleOut
	if err := scheduleCall(ctx, api, http.MethodGet, "/api/schedules/"+url.PathEscape(id), nil, &sc); err != nil {
		return err
	}
	if asJSON {
		return writeJSONOut(e.stdout, sc)
	}
	fmt.Fprintf(e.stdout, "%s  %s\n  %q in %s, catch-up %s; %s\n  policy %s\n", sc.ID, sc.title(), sc.Cron, sc.TimeZone, sc.CatchUp, sc.next(), sc.Policy)
	if len(sc.Runs) == 0 {
		fmt.Fprintln(e.stdout, "  no runs yet")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  OCCURRENCE\tSTATUS\tSESSION\tREFUSED\tERROR")
	for _, r := range sc.Runs {
		var refusals []json.RawMessage
		_ = json.Unmarshal(r.Refusals, &refusals)
		session := r.SessionID
		if session == "" {
			session = "-"
		}
		occ := sc.inZone(r.OccurrenceAt)
		if r.Covers > 1 {
			occ += fmt.Sprintf(" (+%d missed)", r.Covers-1)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\n", occ, r.Status, session, len(refusals), r.Error)
	}
	return tw.Flush()
}

// scheduleAct pauses, resumes or removes a schedule.
func scheduleAct(ctx context.Context, e env, act string, args []string) error {
	id, server, _, help, err := scheduleID(e, act, args)
	if help || err != nil {
		return err
	}
	api, err := scheduleClient(e, server)
	if err != nil {
		return err
	}
	path := "/api/schedules/" + url.PathEscape(id)
	if act == "rm" {
		if err := scheduleCall(ctx, api, http.MethodDelete, path, nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "schedule %s removed; the sessions of its runs stay\n", id)
		return nil
	}
	var sc scheduleOut
	if err := scheduleCall(ctx, api, http.MethodPost, path+"/"+act, map[string]any{}, &sc); err != nil {
		return err
	}
	if sc.Paused {
		fmt.Fprintf(e.stdout, "schedule %s paused: no run until jean2 schedule resume %s\n", sc.ID, sc.ID)
		return nil
	}
	fmt.Fprintf(e.stdout, "schedule %s resumed; %s (the occurrences while paused are not run)\n", sc.ID, sc.next())
	return nil
}

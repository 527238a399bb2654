package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/jean2/jean2/schedule"
	"github.com/jean2/jean2/store"
)

// ScheduleConfig configures the scheduled sessions (docs/automation.md).
type ScheduleConfig struct {
	// Off runs no schedule on this instance (the API still edits them).
	Off bool
	// Clock is the scheduler's time (nil: the system's); tests give a schedule.FakeClock.
	Clock schedule.Clock
	// Grace and Poll as schedule.Options (0: the defaults).
	Grace, Poll time.Duration
}

// maxSchedulePrompt bounds a schedule's prompt, as jean2 run bounds one from stdin.
const maxSchedulePrompt = 1 << 20

// recentRuns is how many runs a schedule shows with it.
const recentRuns = 20

// scheduleView is a schedule as the API shows it: its policy read, when it runs next, and
// its recent runs (the newest first).
type scheduleView struct {
	store.Schedule
	Policy    schedule.Policy     `json:"policy"`
	NextRunAt *time.Time          `json:"nextRunAt"` // null while paused
	Runs      []store.ScheduleRun `json:"runs"`
}

func (s *Server) viewSchedule(ctx context.Context, sc store.Schedule) (scheduleView, error) {
	p, err := schedule.ParsePolicy(sc.Policy)
	if err != nil {
		p = schedule.Policy{Allow: []string{}, Deny: []string{}}
	}
	v := scheduleView{Schedule: sc, Policy: p}
	if !sc.Paused {
		next := sc.NextAt
		v.NextRunAt = &next
	}
	if v.Runs, err = s.db.ScheduleRuns(ctx, sc.ID, recentRuns); err != nil {
		return scheduleView{}, err
	}
	return v, nil
}

// scheduleBody is the body of POST and PATCH /api/schedules: absent fields are left as
// they are (PATCH) or take their defaults (POST).
type scheduleBody struct {
	WorkspaceID *string         `json:"workspaceId"`
	Name        *string         `json:"name"`
	Prompt      *string         `json:"prompt"`
	Cron        *string         `json:"cron"`
	TimeZone    *string         `json:"timeZone"`
	Provider    *string         `json:"provider"`
	Model       *string         `json:"model"`
	Agent       *string         `json:"agent"`
	Policy      json.RawMessage `json:"policy"`
	CatchUp     *string         `json:"catchUp"`
	Paused      *bool           `json:"paused"`
}

func setIf[T any](dst *T, src *T) {
	if src != nil {
		*dst = *src
	}
}

// applySchedule copies the body onto sc and checks the result; when the times change (the
// cron, the zone, a resume) the next occurrence is counted again from now.
func (s *Server) applySchedule(ctx context.Context, b scheduleBody, sc *store.Schedule) error {
	before := *sc
	setIf(&sc.Name, b.Name)
	setIf(&sc.Prompt, b.Prompt)
	setIf(&sc.Cron, b.Cron)
	setIf(&sc.TimeZone, b.TimeZone)
	setIf(&sc.Provider, b.Provider)
	setIf(&sc.Model, b.Model)
	setIf(&sc.CatchUp, b.CatchUp)
	setIf(&sc.Paused, b.Paused)
	sc.Name, sc.Provider, sc.Model = strings.TrimSpace(sc.Name), strings.TrimSpace(sc.Provider), strings.TrimSpace(sc.Model)
	sc.Cron, sc.TimeZone = strings.TrimSpace(sc.Cron), strings.TrimSpace(sc.TimeZone)
	if b.Policy != nil {
		sc.Policy = b.Policy
	}
	spec, err := schedule.ParseSpec(sc.Cron, sc.TimeZone)
	if err != nil {
		return badRequest("%v", err)
	}
	p, err := schedule.ParsePolicy(sc.Policy)
	if err != nil {
		return badRequest("%v", err)
	}
	sc.Policy = p.JSON()
	switch {
	case strings.TrimSpace(sc.Prompt) == "":
		return badRequest("prompt is empty: give the message each run sends")
	case len(sc.Prompt) > maxSchedulePrompt:
		return badRequest("prompt is %d bytes; at most %d", len(sc.Prompt), maxSchedulePrompt)
	case strings.ContainsRune(sc.Prompt, 0):
		return badRequest("prompt holds a NUL character")
	case len(sc.Name) > 200:
		return badRequest("name is %d characters; keep it under 200", len(sc.Name))
	case sc.CatchUp == "":
		sc.CatchUp = schedule.CatchUpOnce
	case sc.CatchUp != schedule.CatchUpOnce && sc.CatchUp != schedule.CatchUpSkip:
		return badRequest("catchUp %q is not once or skip", sc.CatchUp)
	}
	if b.Agent != nil {
		// Checked as a session's agent is: a name the workspace's agents have.
		probe := store.Session{WorkspaceID: sc.WorkspaceID}
		if err := s.applyAgent(ctx, b.Agent, &probe); err != nil {
			return err
		}
		sc.Agent = probe.Agent
	}
	if sc.Provider != "" {
		if _, ok := s.providers.Set().Lookup(sc.Provider); !ok {
			return badRequest("provider %q is not configured (configured: %s); leave it empty for the default", sc.Provider, s.providers.names())
		}
	}
	if sc.ID == "" || sc.Cron != before.Cron || sc.TimeZone != before.TimeZone || (before.Paused && !sc.Paused) {
		sc.NextAt = spec.Next(s.schedClock().Now())
	}
	return nil
}

func (s *Server) schedClock() schedule.Clock {
	if s.cfg.Schedules.Clock != nil {
		return s.cfg.Schedules.Clock
	}
	return schedule.SystemClock{}
}

func (s *Server) scheduleByID(ctx context.Context, id string) (store.Schedule, error) {
	sc, err := s.db.Schedule(ctx, id)
	return sc, storeErr(err, "schedule "+id)
}

func (s *Server) listSchedules(w http.ResponseWriter, r *http.Request) error {
	wsID := r.URL.Query().Get("workspace")
	if wsID != "" {
		if _, err := s.workspace(r.Context(), wsID); err != nil {
			return err
		}
	}
	list, err := s.db.ListSchedules(r.Context(), wsID)
	if err != nil {
		return err
	}
	out := make([]scheduleView, 0, len(list))
	for _, sc := range list {
		v, err := s.viewSchedule(r.Context(), sc)
		if err != nil {
			return err
		}
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"schedules": out})
	return nil
}

func (s *Server) createSchedule(w http.ResponseWriter, r *http.Request) error {
	var b scheduleBody
	if err := decodeBody(w, r, &b); err != nil {
		return err
	}
	if b.WorkspaceID == nil || *b.WorkspaceID == "" {
		return badRequest("workspaceId is missing: the workspace the runs work in (GET /api/workspaces)")
	}
	if b.Prompt == nil || b.Cron == nil || b.TimeZone == nil {
		return badRequest("prompt, cron and timeZone are required")
	}
	if _, err := s.workspace(r.Context(), *b.WorkspaceID); err != nil {
		return badRequest("workspace %s not found: create it first (POST /api/workspaces)", *b.WorkspaceID)
	}
	sc := store.Schedule{WorkspaceID: *b.WorkspaceID}
	if err := s.applySchedule(r.Context(), b, &sc); err != nil {
		return err
	}
	sc, err := s.db.CreateSchedule(r.Context(), sc)
	if err != nil {
		return storeErr(err, "workspace "+*b.WorkspaceID)
	}
	s.pokeScheduler()
	return s.writeSchedule(w, r, http.StatusCreated, sc)
}

func (s *Server) getSchedule(w http.ResponseWriter, r *http.Request) error {
	sc, err := s.scheduleByID(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return s.writeSchedule(w, r, http.StatusOK, sc)
}

func (s *Server) patchSchedule(w http.ResponseWriter, r *http.Request) error {
	var b scheduleBody
	if err := decodeBody(w, r, &b); err != nil {
		return err
	}
	return s.changeSchedule(w, r, b)
}

// changeSchedule applies b to the schedule of the request's path and saves it.
func (s *Server) changeSchedule(w http.ResponseWriter, r *http.Request, b scheduleBody) error {
	sc, err := s.scheduleByID(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	if b.WorkspaceID != nil && *b.WorkspaceID != sc.WorkspaceID {
		return badRequest("a schedule does not move between workspaces: delete it and create another")
	}
	if err := s.applySchedule(r.Context(), b, &sc); err != nil {
		return err
	}
	if sc, err = s.db.UpdateSchedule(r.Context(), sc); err != nil {
		return storeErr(err, "schedule "+sc.ID)
	}
	s.pokeScheduler()
	return s.writeSchedule(w, r, http.StatusOK, sc)
}

func (s *Server) pauseSchedule(w http.ResponseWriter, r *http.Request) error {
	paused := true
	return s.changeSchedule(w, r, scheduleBody{Paused: &paused})
}

func (s *Server) resumeSchedule(w http.ResponseWriter, r *http.Request) error {
	paused := false
	return s.changeSchedule(w, r, scheduleBody{Paused: &paused})
}

func (s *Server) deleteSchedule(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.db.DeleteSchedule(r.Context(), id); err != nil {
		return storeErr(err, "schedule "+id)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) listScheduleRuns(w http.ResponseWriter, r *http.Request) error {
	sc, err := s.scheduleByID(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	limit, err := queryInt(r, "limit", 100)
	if err != nil {
		return err
	}
	runs, err := s.db.ScheduleRuns(r.Context(), sc.ID, int(limit))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"runs": runs})
	return nil
}

func (s *Server) writeSchedule(w http.ResponseWriter, r *http.Request, status int, sc store.Schedule) error {
	v, err := s.viewSchedule(r.Context(), sc)
	if err != nil {
		return err
	}
	writeJSON(w, status, v)
	return nil
}

func (s *Server) pokeScheduler() {
	if s.sched != nil {
		s.sched.Poke()
	}
}

// scheduleRoutes are the routes of /api/schedules (docs/api.md).
func (s *Server) scheduleRoutes(route func(string, handlerFunc)) {
	route("GET /api/schedules", s.listSchedules)
	route("POST /api/schedules", s.createSchedule)
	route("GET /api/schedules/{id}", s.getSchedule)
	route("PATCH /api/schedules/{id}", s.patchSchedule)
	route("DELETE /api/schedules/{id}", s.deleteSchedule)
	route("POST /api/schedules/{id}/pause", s.pauseSchedule)
	route("POST /api/schedules/{id}/resume", s.resumeSchedule)
	route("GET /api/schedules/{id}/runs", s.listScheduleRuns)
}

// startScheduler makes and starts the server's scheduler, unless Config.Schedules.Off.
func (s *Server) startScheduler() {
	if s.cfg.Schedules.Off {
		return
	}
	if s.node == nil {
		// Alone on its database, this instance runs every schedule run: one still marked
		// running is one the last process did not see end (killed, or the machine stopped).
		n, err := s.db.InterruptScheduleRuns(s.ctx, "jean2 stopped while the run's turn ran")
		if err != nil {
			s.log.Warn("scheduled sessions: marking the interrupted runs", "error", err)
		} else if n > 0 {
			s.log.Info("scheduled sessions: runs interrupted by the last stop", "runs", n)
		}
	}
	s.sched = schedule.New(schedule.Options{
		Store: s.db, Runner: scheduledRunner{s}, Clock: s.cfg.Schedules.Clock, Instance: s.instance,
		Grace: s.cfg.Schedules.Grace, Poll: s.cfg.Schedules.Poll, Here: s.scheduleHere, Logger: s.log,
	})
	s.sched.Start()
}

// scheduleRef is, in a session's view, the schedule run the session is.
type scheduleRef struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	OccurrenceAt time.Time `json:"occurrenceAt"`
	Covers       int       `json:"covers"`
	Status       string    `json:"status"`
}

// scheduleRefOf is the schedule run a session is, or nil.
func (s *Server) scheduleRefOf(ctx context.Context, sessionID string) (*scheduleRef, error) {
	run, err := s.db.ScheduleRunOfSession(ctx, sessionID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	name := ""
	if sc, err := s.db.Schedule(ctx, run.ScheduleID); err == nil {
		name = sc.Name
	}
	return refOf(run, name), nil
}

func refOf(run store.ScheduleRun, name string) *scheduleRef {
	return &scheduleRef{ID: run.ScheduleID, Name: name, OccurrenceAt: run.OccurrenceAt, Covers: run.Covers, Status: run.Status}
}

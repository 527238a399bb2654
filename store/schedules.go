package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Schedule is a prompt a person asked to be sent to a workspace on a cron schedule. Each
// occurrence runs as a new, ordinary session. Policy is the JSON of the rules that answer
// the run's asks (package schedule reads it); the store keeps it as given.
type Schedule struct {
	ID          string `json:"id"`
	WorkspaceID string `json:"workspaceId"`
	Name        string `json:"name"`
	Prompt      string `json:"prompt"`
	Cron        string `json:"cron"`
	TimeZone    string `json:"timeZone"`
	Provider    string `json:"provider"`
	Model       string `json:"model"`
	// Agent names the agent preset its runs' sessions use; "" is the default.
	Agent   string          `json:"agent"`
	Policy  json.RawMessage `json:"policy"`
	CatchUp string          `json:"catchUp"` // "once" or "skip"
	Paused  bool            `json:"paused"`
	// NextAt is the next occurrence not yet handled (zero while paused means nothing).
	NextAt    time.Time `json:"nextAt"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// ScheduleRun is one claimed occurrence of a schedule: the run's session and how it ended.
type ScheduleRun struct {
	ScheduleID   string    `json:"scheduleId"`
	OccurrenceAt time.Time `json:"occurrenceAt"`
	// Covers is how many occurrences the row stands for: more than one when jean2 was down
	// and they were caught up in one run (or skipped together).
	Covers     int             `json:"covers"`
	SessionID  string          `json:"sessionId,omitempty"`
	InstanceID string          `json:"instanceId,omitempty"`
	Status     string          `json:"status"` // RunRunning, RunSkipped, or how the turn ended
	Reason     string          `json:"reason,omitempty"`
	Error      string          `json:"error,omitempty"`
	Refusals   json.RawMessage `json:"refusals"`
	StartedAt  time.Time       `json:"startedAt"`
	FinishedAt time.Time       `json:"finishedAt,omitzero"`
}

// Statuses of a schedule run the store itself sets; a finished run gets its outcome's.
const (
	RunRunning = "running"
	RunSkipped = "skipped"
)

const scheduleColumns = `id, workspace_id, name, prompt, cron, time_zone, provider, model, policy, catch_up, paused,
	next_at, created_at, updated_at, agent`

func scanSchedule(row interface{ Scan(...any) error }) (Schedule, error) {
	var s Schedule
	var policy string
	var paused, next, created, updated int64
	if err := row.Scan(&s.ID, &s.WorkspaceID, &s.Name, &s.Prompt, &s.Cron, &s.TimeZone, &s.Provider, &s.Model,
		&policy, &s.CatchUp, &paused, &next, &created, &updated, &s.Agent); err != nil {
		return Schedule{}, err
	}
	s.Policy, s.Paused = json.RawMessage(policy), paused != 0
	s.NextAt, s.CreatedAt, s.UpdatedAt = toTime(next), toTime(created), toTime(updated)
	return s, nil
}

func policyText(p json.RawMessage) string {
	if len(p) == 0 {
		return "{}"
	}
	return string(p)
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// CreateSchedule stores a new schedule in an existing workspace. An empty ID gets a fresh
// one; the timestamps are set to now. NextAt must be set by the caller (it knows the cron).
func (db *DB) CreateSchedule(ctx context.Context, s Schedule) (Schedule, error) {
	if s.ID == "" {
		s.ID = NewID("sch_")
	}
	t := now()
	s.CreatedAt, s.UpdatedAt = toTime(t), toTime(t)
	_, err := db.execWrite(ctx, `INSERT INTO schedules (`+scheduleColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		s.ID, s.WorkspaceID, s.Name, s.Prompt, s.Cron, s.TimeZone, s.Provider, s.Model, policyText(s.Policy), s.CatchUp,
		boolInt(s.Paused), s.NextAt.UnixMilli(), t, t, s.Agent)
	switch {
	case isForeignKey(err):
		return Schedule{}, fmt.Errorf("create schedule %s: workspace %s: %w", s.ID, s.WorkspaceID, ErrNotFound)
	case isUnique(err):
		return Schedule{}, fmt.Errorf("create schedule %s: the id is taken: %w", s.ID, ErrConflict)
	case err != nil:
		return Schedule{}, fmt.Errorf("create schedule %s: %w", s.ID, err)
	}
	return db.Schedule(ctx, s.ID)
}

// Schedule returns the schedule with id.
func (db *DB) Schedule(ctx context.Context, id string) (Schedule, error) {
	s, err := scanSchedule(db.read.QueryRowContext(ctx, `SELECT `+scheduleColumns+` FROM schedules WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return Schedule{}, fmt.Errorf("get schedule %s: %w", id, err)
	}
	return s, nil
}

// ListSchedules returns the schedules of a workspace ("" for every workspace), oldest first.
func (db *DB) ListSchedules(ctx context.Context, workspaceID string) ([]Schedule, error) {
	return db.querySchedules(ctx, "list schedules", `SELECT `+scheduleColumns+` FROM schedules
		WHERE ? = '' OR workspace_id = ? ORDER BY created_at, id`, workspaceID, workspaceID)
}

// DueSchedules returns the schedules not paused whose next occurrence is at or before t.
func (db *DB) DueSchedules(ctx context.Context, t time.Time) ([]Schedule, error) {
	return db.querySchedules(ctx, "list due schedules", `SELECT `+scheduleColumns+` FROM schedules
		WHERE paused = 0 AND next_at <= ? ORDER BY next_at, id`, t.UnixMilli())
}

func (db *DB) querySchedules(ctx context.Context, op, query string, args ...any) ([]Schedule, error) {
	return queryAll(ctx, db, op, scanSchedule, query, args...)
}

// NextScheduled is the earliest next occurrence of the schedules not paused; ok is false
// when there is none.
func (db *DB) NextScheduled(ctx context.Context) (t time.Time, ok bool, err error) {
	var ms sql.NullInt64
	if err := db.read.QueryRowContext(ctx, `SELECT MIN(next_at) FROM schedules WHERE paused = 0`).Scan(&ms); err != nil {
		return time.Time{}, false, fmt.Errorf("read the next scheduled occurrence: %w", err)
	}
	return nullTime(ms), ms.Valid, nil
}

// UpdateSchedule saves every field of s but its workspace and creation time, and returns
// the schedule as stored.
func (db *DB) UpdateSchedule(ctx context.Context, s Schedule) (Schedule, error) {
	err := affected(db.execWrite(ctx, `UPDATE schedules SET name = ?, prompt = ?, cron = ?, time_zone = ?, provider = ?,
		model = ?, policy = ?, catch_up = ?, paused = ?, next_at = ?, updated_at = ?, agent = ? WHERE id = ?`,
		s.Name, s.Prompt, s.Cron, s.TimeZone, s.Provider, s.Model, policyText(s.Policy), s.CatchUp, boolInt(s.Paused),
		s.NextAt.UnixMilli(), now(), s.Agent, s.ID))
	if err != nil {
		return Schedule{}, fmt.Errorf("update schedule %s: %w", s.ID, err)
	}
	return db.Schedule(ctx, s.ID)
}

// DeleteSchedule removes the schedule and its runs' records; the runs' sessions stay.
func (db *DB) DeleteSchedule(ctx context.Context, id string) error {
	if err := affected(db.execWrite(ctx, `DELETE FROM schedules WHERE id = ?`, id)); err != nil {
		return fmt.Errorf("delete schedule %s: %w", id, err)
	}
	return nil
}

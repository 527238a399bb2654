package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// OccurrenceClaim is an instance's bid to handle a schedule's due occurrences.
type OccurrenceClaim struct {
	ScheduleID string
	// From is the schedule's NextAt as the instance read it: the claim holds only while it
	// is still the schedule's (another instance, or an edit, moved it otherwise).
	From time.Time
	// NextAt is the schedule's next occurrence once these are handled.
	NextAt time.Time
	// Run is the row recorded: OccurrenceAt, Covers, InstanceID, and Status RunRunning (a
	// run, with Session) or RunSkipped (none).
	Run ScheduleRun
	// Session is the run's new session; nil for a skip.
	Session *Session
}

// ErrNotClaimed says another instance (or an edit of the schedule) handled the occurrence
// first: nothing was written.
var ErrNotClaimed = errors.New("the occurrence was handled elsewhere")

// ClaimOccurrence records, in one transaction, that this instance handles the schedule's
// occurrence: it moves the schedule's next_at from c.From to c.NextAt, inserts the run's
// row (unique per schedule and occurrence time) and creates the run's session. When
// next_at is no longer c.From, or the row exists, nothing is written and the error wraps
// ErrNotClaimed: on PostgreSQL replicas exactly one instance gets each occurrence (the
// UPDATE waits for the row lock a concurrent claim holds, then finds next_at moved).
func (db *DB) ClaimOccurrence(ctx context.Context, c OccurrenceClaim) (ScheduleRun, *Session, error) {
	run := c.Run
	run.ScheduleID = c.ScheduleID
	t := now()
	run.StartedAt = toTime(t)
	if run.Covers < 1 {
		run.Covers = 1
	}
	run.Refusals = json.RawMessage(`[]`)
	var ses *Session
	err := db.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE schedules SET next_at = ? WHERE id = ? AND next_at = ? AND paused = 0`,
			c.NextAt.UnixMilli(), c.ScheduleID, c.From.UnixMilli())
		if err := affected(res, err); errors.Is(err, ErrNotFound) {
			return ErrNotClaimed
		} else if err != nil {
			return err
		}
		var sessionID any
		if c.Session != nil {
			s := *c.Session
			if s.ID == "" {
				s.ID = NewID("ses_")
			}
			s.CreatedAt, s.UpdatedAt = toTime(t), toTime(t)
			if _, err := tx.ExecContext(ctx, `INSERT INTO sessions (id, workspace_id, title, provider, model, agent, created_at, updated_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, s.ID, s.WorkspaceID, s.Title, s.Provider, s.Model, s.Agent, t, t); err != nil {
				return fmt.Errorf("create the run's session: %w", err)
			}
			ses, sessionID, run.SessionID = &s, s.ID, s.ID
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO schedule_runs (schedule_id, occurrence_at, covers, session_id, instance_id,
			status, started_at) VALUES (?, ?, ?, ?, ?, ?, ?)`, c.ScheduleID, run.OccurrenceAt.UnixMilli(), run.Covers,
			sessionID, run.InstanceID, run.Status, t)
		if isUnique(err) {
			return ErrNotClaimed
		}
		return err
	})
	if err != nil {
		return ScheduleRun{}, nil, fmt.Errorf("claim occurrence %s of schedule %s: %w", run.OccurrenceAt.Format(time.RFC3339), c.ScheduleID, err)
	}
	return run, ses, nil
}

// FinishScheduleRun records how a run ended.
func (db *DB) FinishScheduleRun(ctx context.Context, run ScheduleRun) error {
	refusals := run.Refusals
	if len(refusals) == 0 {
		refusals = json.RawMessage(`[]`)
	}
	err := affected(db.execWrite(ctx, `UPDATE schedule_runs SET status = ?, reason = ?, error = ?, refusals = ?, finished_at = ?
		WHERE schedule_id = ? AND occurrence_at = ?`, run.Status, run.Reason, run.Error, string(refusals), now(),
		run.ScheduleID, run.OccurrenceAt.UnixMilli()))
	if err != nil {
		return fmt.Errorf("finish run %s of schedule %s: %w", run.OccurrenceAt.Format(time.RFC3339), run.ScheduleID, err)
	}
	return nil
}

const scheduleRunColumns = `schedule_id, occurrence_at, covers, COALESCE(session_id, ''), instance_id, status, reason, error,
	refusals, started_at, finished_at`

func scanScheduleRun(row interface{ Scan(...any) error }) (ScheduleRun, error) {
	var r ScheduleRun
	var occ, started int64
	var finished sql.NullInt64
	var refusals string
	if err := row.Scan(&r.ScheduleID, &occ, &r.Covers, &r.SessionID, &r.InstanceID, &r.Status, &r.Reason, &r.Error,
		&refusals, &started, &finished); err != nil {
		return ScheduleRun{}, err
	}
	r.OccurrenceAt, r.StartedAt, r.FinishedAt = toTime(occ), toTime(started), nullTime(finished)
	r.Refusals = json.RawMessage(refusals)
	return r, nil
}

// ScheduleRuns returns the schedule's most recent runs (at most limit; 0 for all), newest
// occurrence first.
func (db *DB) ScheduleRuns(ctx context.Context, scheduleID string, limit int) ([]ScheduleRun, error) {
	n := int64(limit)
	if limit <= 0 {
		n = noLimit
	}
	return queryAll(ctx, db, "list runs of schedule "+scheduleID, scanScheduleRun, `SELECT `+scheduleRunColumns+`
		FROM schedule_runs WHERE schedule_id = ? ORDER BY occurrence_at DESC LIMIT ?`, scheduleID, n)
}

// ScheduleRunOfSession returns the run a session is (ErrNotFound for a session no schedule
// started).
func (db *DB) ScheduleRunOfSession(ctx context.Context, sessionID string) (ScheduleRun, error) {
	r, err := scanScheduleRun(db.read.QueryRowContext(ctx, `SELECT `+scheduleRunColumns+` FROM schedule_runs
		WHERE session_id = ?`, sessionID))
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return ScheduleRun{}, fmt.Errorf("get the schedule run of session %s: %w", sessionID, err)
	}
	return r, nil
}

// InterruptScheduleRuns records every run still marked running as failed with why: a lone
// jean2 starting runs none of them, so they are the runs its last process did not see end.
func (db *DB) InterruptScheduleRuns(ctx context.Context, why string) (int64, error) {
	res, err := db.execWrite(ctx, `UPDATE schedule_runs SET status = 'failed', reason = 'interrupted', error = ?, finished_at = ?
		WHERE status = ?`, why, now(), RunRunning)
	if err != nil {
		return 0, fmt.Errorf("mark the interrupted schedule runs: %w", err)
	}
	return res.RowsAffected()
}

// ScheduledSession is a session a schedule started: the run and its schedule's name.
type ScheduledSession struct {
	ScheduleRun
	ScheduleName string
}

// ScheduledSessions returns the sessions of a workspace that schedules started, by session
// id: one query for a list of sessions instead of one per session.
func (db *DB) ScheduledSessions(ctx context.Context, workspaceID string) (map[string]ScheduledSession, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT r.schedule_id, r.occurrence_at, r.covers, COALESCE(r.session_id, ''),
		r.instance_id, r.status, r.reason, r.error, r.refusals, r.started_at, r.finished_at, s.name
		FROM schedule_runs r JOIN schedules s ON s.id = r.schedule_id
		WHERE s.workspace_id = ? AND r.session_id IS NOT NULL`, workspaceID)
	if err != nil {
		return nil, fmt.Errorf("list the scheduled sessions of workspace %s: %w", workspaceID, err)
	}
	defer rows.Close()
	out := map[string]ScheduledSession{}
	for rows.Next() {
		var ss ScheduledSession
		var occ, started int64
		var finished sql.NullInt64
		var refusals string
		r := &ss.ScheduleRun
		if err := rows.Scan(&r.ScheduleID, &occ, &r.Covers, &r.SessionID, &r.InstanceID, &r.Status, &r.Reason, &r.Error,
			&refusals, &started, &finished, &ss.ScheduleName); err != nil {
			return nil, fmt.Errorf("list the scheduled sessions of workspace %s: %w", workspaceID, err)
		}
		r.OccurrenceAt, r.StartedAt, r.FinishedAt = toTime(occ), toTime(started), nullTime(finished)
		r.Refusals = json.RawMessage(refusals)
		out[r.SessionID] = ss
	}
	return out, rows.Err()
}

package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Event is one entry of a session's event log, which clients replay from a sequence
// number after they reconnect. SessionID "" is the server's own log.
type Event struct {
	SessionID string          `json:"sessionId"`
	Seq       int64           `json:"seq"` // 1, 2, 3… within the session; never reused
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
	CreatedAt time.Time       `json:"createdAt"`
}

// NewEvent is an event to append: its type and JSON payload (nil means null).
type NewEvent struct {
	Type    string
	Payload json.RawMessage
}

// AppendEvents adds events to a session's log in one transaction and returns them with
// their sequence numbers. Batch the events of a burst into one call: each call is one
// commit (or append them in a Batch with the writes they announce).
func (db *DB) AppendEvents(ctx context.Context, sessionID string, events ...NewEvent) ([]Event, error) {
	if len(events) == 0 {
		return []Event{}, nil
	}
	var out []Event
	err := db.batch(ctx, func(tx *Tx) error {
		var err error
		out, err = tx.AppendEvents(ctx, sessionID, events...)
		return err
	})
	if err != nil {
		return nil, wrapBatch(err, "append events to session %q", sessionID)
	}
	return out, nil
}

// AppendEvents is DB.AppendEvents within the batch: the events are numbered and stored
// with the batch's other writes, and exist only if it commits.
func (tx *Tx) AppendEvents(ctx context.Context, sessionID string, events ...NewEvent) ([]Event, error) {
	out := make([]Event, 0, len(events))
	for i, e := range events {
		if e.Type == "" {
			return nil, fmt.Errorf("append events to session %q: event %d has no type", sessionID, i+1)
		}
		if len(e.Payload) == 0 {
			e.Payload = json.RawMessage("null")
		}
		if !json.Valid(e.Payload) {
			return nil, fmt.Errorf("append events to session %q: event %d (%s): the payload is not valid JSON", sessionID, i+1, e.Type)
		}
		out = append(out, Event{SessionID: sessionID, Type: e.Type, Payload: e.Payload})
	}
	if len(out) == 0 {
		return out, nil
	}
	t := now()
	var last int64
	err := tx.stmt(ctx, stmtBumpSessionEventSeq).QueryRowContext(ctx, len(out), tx.touched[sessionID], sessionID).Scan(&last)
	if err == nil {
		delete(tx.touched, sessionID)
	}
	if errors.Is(err, sql.ErrNoRows) {
		err = tx.stmt(ctx, stmtBumpEventSeq).QueryRowContext(ctx, sessionID, len(out)).Scan(&last)
	}
	if err != nil {
		return nil, fmt.Errorf("append events to session %q: %w", sessionID, err)
	}
	first := last - int64(len(out)) + 1
	for i := range out {
		out[i].Seq, out[i].CreatedAt = first+int64(i), toTime(t)
	}
	args := make([]any, 0, 5*min(len(out), maxEventRows))
	for start := 0; start < len(out); start += maxEventRows {
		chunk := out[start:min(start+maxEventRows, len(out))]
		args = args[:0]
		for _, e := range chunk {
			args = append(args, sessionID, e.Seq, e.Type, string(e.Payload), t)
		}
		if _, err := tx.insertEvents(ctx, len(chunk)).ExecContext(ctx, args...); err != nil {
			return nil, fmt.Errorf("append events %d to %d (%s…) to session %q: %w", start+1, start+len(chunk), chunk[0].Type, sessionID, err)
		}
	}
	return out, nil
}

// EventsAfter returns a session's events with Seq above afterSeq, in order; at most limit
// of them when limit is above zero. A client that finds the first Seq above afterSeq+1
// missed events that were pruned and should reload the session instead.
func (db *DB) EventsAfter(ctx context.Context, sessionID string, afterSeq int64, limit int) ([]Event, error) {
	if limit <= 0 {
		limit = noLimit
	}
	rows, err := db.read.QueryContext(ctx, `SELECT seq, type, payload, created_at FROM events WHERE session_id = ? AND seq > ?
		ORDER BY seq LIMIT ?`, sessionID, afterSeq, limit)
	out, err := scanEvents(rows, err, sessionID)
	if err != nil {
		return nil, fmt.Errorf("events of session %q after %d: %w", sessionID, afterSeq, err)
	}
	return out, nil
}

// EventsOfTypes returns the session's last limit events whose type is one of types, oldest
// first: what a client needs of the log without replaying all of it (the asks a reopened
// page shows as answered).
func (db *DB) EventsOfTypes(ctx context.Context, sessionID string, types []string, limit int) ([]Event, error) {
	if len(types) == 0 {
		return []Event{}, nil
	}
	if limit <= 0 {
		limit = noLimit
	}
	args := []any{sessionID}
	marks := make([]string, len(types))
	for i, t := range types {
		marks[i] = "?"
		args = append(args, t)
	}
	args = append(args, limit)
	rows, err := db.read.QueryContext(ctx, `SELECT seq, type, payload, created_at FROM events
		WHERE session_id = ? AND type IN (`+strings.Join(marks, ", ")+`) ORDER BY seq DESC LIMIT ?`, args...)
	out, err := scanEvents(rows, err, sessionID)
	if err != nil {
		return nil, fmt.Errorf("events of session %q of types %v: %w", sessionID, types, err)
	}
	slices.Reverse(out)
	return out, nil
}

// scanEvents reads the rows of a query for (seq, type, payload, created_at), which queryErr
// is the error of, and closes them.
func scanEvents(rows *sql.Rows, queryErr error, sessionID string) ([]Event, error) {
	if queryErr != nil {
		return nil, queryErr
	}
	defer rows.Close()
	out := []Event{}
	for rows.Next() {
		e := Event{SessionID: sessionID}
		var payload string
		var created int64
		if err := rows.Scan(&e.Seq, &e.Type, &payload, &created); err != nil {
			return nil, err
		}
		e.Payload, e.CreatedAt = json.RawMessage(payload), toTime(created)
		out = append(out, e)
	}
	return out, rows.Err()
}

// LastEventSeq is the Seq of the last event appended to a session's log (0 when none).
func (db *DB) LastEventSeq(ctx context.Context, sessionID string) (int64, error) {
	var last int64
	err := db.read.QueryRowContext(ctx, `SELECT COALESCE((SELECT last_event_seq FROM sessions WHERE id = ?1),
		(SELECT last_seq FROM event_seqs WHERE session_id = ?1), 0)`, sessionID).Scan(&last)
	if err != nil {
		return 0, fmt.Errorf("last event of session %q: %w", sessionID, err)
	}
	return last, nil
}

// PruneEvents removes a session's events with Seq up to throughSeq and returns how many
// went. Later events keep their numbers.
func (db *DB) PruneEvents(ctx context.Context, sessionID string, throughSeq int64) (int64, error) {
	res, err := db.execWrite(ctx, `DELETE FROM events WHERE session_id = ? AND seq <= ?`, sessionID, throughSeq)
	if err == nil {
		var n int64
		if n, err = res.RowsAffected(); err == nil {
			return n, nil
		}
	}
	return 0, fmt.Errorf("prune events of session %q through %d: %w", sessionID, throughSeq, err)
}

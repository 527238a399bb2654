package store

import (
	"context"
	"fmt"
	"time"
)

// OpenTurn is a turn that started and has not said it finished: while one runs, and after a
// crash until the next start seals it.
type OpenTurn struct {
	SessionID     string    `json:"sessionId"`
	TurnID        string    `json:"turnId"`
	UserMessageID string    `json:"userMessageId"`
	StartedAt     time.Time `json:"startedAt"`
}

// OpenTurn records that a turn started in its session, in the batch that stores the turn's
// start (it is kept in the session's row). A session has one open turn at most: a record
// left by a turn nobody sealed is replaced.
func (tx *Tx) OpenTurn(ctx context.Context, t OpenTurn) error {
	if t.SessionID == "" || t.TurnID == "" {
		return fmt.Errorf("open turn %q of session %q: both ids are required", t.TurnID, t.SessionID)
	}
	err := affected(tx.stmt(ctx, stmtOpenTurn).ExecContext(ctx, t.TurnID, t.UserMessageID, fromTime(t.StartedAt), t.SessionID))
	if err != nil {
		return fmt.Errorf("open turn %s: session %s: %w", t.TurnID, t.SessionID, err)
	}
	return nil
}

// CloseTurn removes the record of the session's open turn if it is turnID's (a later turn's
// record stays); closing a turn that is not open does nothing.
func (tx *Tx) CloseTurn(ctx context.Context, sessionID, turnID string) error {
	if _, err := tx.stmt(ctx, stmtCloseTurn).ExecContext(ctx, sessionID, turnID); err != nil {
		return fmt.Errorf("close turn %s of session %s: %w", turnID, sessionID, err)
	}
	return nil
}

// CloseTurn is Tx.CloseTurn on its own.
func (db *DB) CloseTurn(ctx context.Context, sessionID, turnID string) error {
	return db.batch(ctx, func(tx *Tx) error { return tx.CloseTurn(ctx, sessionID, turnID) })
}

// OpenTurns returns the open turns of every session, oldest first: after a crash, the turns
// the next start has to seal.
func (db *DB) OpenTurns(ctx context.Context) ([]OpenTurn, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT id, open_turn_id, open_turn_user_message_id, open_turn_started_at
		FROM sessions WHERE open_turn_id <> '' ORDER BY open_turn_started_at, id`)
	if err != nil {
		return nil, fmt.Errorf("list open turns: %w", err)
	}
	defer rows.Close()
	out := []OpenTurn{}
	for rows.Next() {
		var t OpenTurn
		var started int64
		if err := rows.Scan(&t.SessionID, &t.TurnID, &t.UserMessageID, &started); err != nil {
			return nil, fmt.Errorf("list open turns: %w", err)
		}
		t.StartedAt = toTime(started)
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list open turns: %w", err)
	}
	return out, nil
}

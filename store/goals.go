package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// SessionGoal returns the goal kept with a session (JSON the harness wrote), nil when it has
// none; an error wrapping ErrNotFound when there is no such session.
func (db *DB) SessionGoal(ctx context.Context, sessionID string) (json.RawMessage, error) {
	var goal string
	err := db.read.QueryRowContext(ctx, `SELECT goal FROM sessions WHERE id = ?`, sessionID).Scan(&goal)
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read the goal of session %s: %w", sessionID, err)
	}
	if goal == "" {
		return nil, nil
	}
	return json.RawMessage(goal), nil
}

// SetSessionGoal keeps goal (valid JSON, or nil to clear it) with the session.
func (db *DB) SetSessionGoal(ctx context.Context, sessionID string, goal json.RawMessage) error {
	if goal != nil && !json.Valid(goal) {
		return fmt.Errorf("set the goal of session %s: the value is not valid JSON", sessionID)
	}
	if err := affected(db.execWrite(ctx, `UPDATE sessions SET goal = ? WHERE id = ?`, string(goal), sessionID)); err != nil {
		return fmt.Errorf("set the goal of session %s: %w", sessionID, err)
	}
	return nil
}

// ReplaceSessionGoal keeps goal with the session only if the goal stored is still old (as
// SessionGoal returned it): the harness's verdict never overwrites a goal a person set or
// cleared meanwhile. It reports whether it replaced it.
func (db *DB) ReplaceSessionGoal(ctx context.Context, sessionID string, old, goal json.RawMessage) (bool, error) {
	if goal != nil && !json.Valid(goal) {
		return false, fmt.Errorf("replace the goal of session %s: the value is not valid JSON", sessionID)
	}
	err := affected(db.execWrite(ctx, `UPDATE sessions SET goal = ? WHERE id = ? AND goal = ?`, string(goal), sessionID, string(old)))
	switch {
	case errors.Is(err, ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("replace the goal of session %s: %w", sessionID, err)
	}
	return true, nil
}

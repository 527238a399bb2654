package store

import (
	"context"
	"encoding/json"
	"fmt"
)

// MaxSessionFactBytes bounds one session fact. Facts are a tool's notes for a conversation
// (a todo list, a counter), read whole into memory by every call of the session; a tool that
// tries to keep a file's worth there is refused rather than growing every later call.
const MaxSessionFactBytes = 256 << 10

// SessionFacts returns every fact kept for the session, by key.
func (db *DB) SessionFacts(ctx context.Context, sessionID string) (map[string]json.RawMessage, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT key, value FROM session_facts WHERE session_id = ?`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("read session %s facts: %w", sessionID, err)
	}
	defer rows.Close()
	facts := map[string]json.RawMessage{}
	for rows.Next() {
		var key, value string
		if err := rows.Scan(&key, &value); err != nil {
			return nil, fmt.Errorf("read session %s facts: %w", sessionID, err)
		}
		facts[key] = json.RawMessage(value)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read session %s facts: %w", sessionID, err)
	}
	return facts, nil
}

// PutSessionFact keeps value (valid JSON, at most MaxSessionFactBytes) under key for the
// session, replacing what was there. A session that does not exist is ErrNotFound.
func (db *DB) PutSessionFact(ctx context.Context, sessionID, key string, value json.RawMessage) error {
	switch {
	case key == "":
		return fmt.Errorf("put session %s fact: the key is empty", sessionID)
	case len(value) > MaxSessionFactBytes:
		return fmt.Errorf("put session %s fact %q: %d bytes is more than the %d a fact may hold",
			sessionID, key, len(value), MaxSessionFactBytes)
	case !json.Valid(value):
		return fmt.Errorf("put session %s fact %q: the value is not valid JSON", sessionID, key)
	}
	res, err := db.execWrite(ctx,
		`INSERT INTO session_facts (session_id, key, value, updated_at)
		 SELECT id, ?, ?, ? FROM sessions WHERE id = ?
		 ON CONFLICT (session_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
		key, string(value), now(), sessionID)
	if err != nil {
		return fmt.Errorf("put session %s fact %q: %w", sessionID, key, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return fmt.Errorf("put session %s fact %q: session %w", sessionID, key, ErrNotFound)
	}
	return nil
}

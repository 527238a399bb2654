package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// Setting returns the JSON value kept under key, or an error wrapping ErrNotFound when none
// is. Settings are the server's own preferences (the unattended policy, the ask timeout,
// the harness's budget), one JSON value per key.
func (db *DB) Setting(ctx context.Context, key string) (json.RawMessage, error) {
	var value string
	err := db.read.QueryRowContext(ctx, `SELECT value FROM settings WHERE key = ?`, key).Scan(&value)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("setting %q: %w", key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read setting %q: %w", key, err)
	}
	return json.RawMessage(value), nil
}

// PutSetting keeps value (valid JSON) under key, replacing what was there.
func (db *DB) PutSetting(ctx context.Context, key string, value json.RawMessage) error {
	if key == "" {
		return errors.New("put setting: the key is empty")
	}
	if !json.Valid(value) {
		return fmt.Errorf("put setting %q: the value is not valid JSON", key)
	}
	if _, err := db.execWrite(ctx,
		`INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)
		 ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
		key, string(value), now()); err != nil {
		return fmt.Errorf("put setting %q: %w", key, err)
	}
	return nil
}

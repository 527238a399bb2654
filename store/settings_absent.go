package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// PutSettingIfAbsent keeps value (valid JSON) under key only if nothing is kept there yet,
// and reports whether it did: of several instances starting at once on one database, the
// first one's value stays.
func (db *DB) PutSettingIfAbsent(ctx context.Context, key string, value json.RawMessage) (bool, error) {
	if key == "" {
		return false, errors.New("put setting: the key is empty")
	}
	if !json.Valid(value) {
		return false, fmt.Errorf("put setting %q: the value is not valid JSON", key)
	}
	res, err := db.execWrite(ctx,
		`INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING`,
		key, string(value), now())
	if err != nil {
		return false, fmt.Errorf("put setting %q: %w", key, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("put setting %q: %w", key, err)
	}
	return n == 1, nil
}

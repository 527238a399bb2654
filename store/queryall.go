package store

import (
	"context"
	"fmt"
)

// queryAll runs a read query and scans each row with scan; op says in errors what the
// query was for ("list sessions of workspace ws_…"). No row is an empty, non-nil slice.
func queryAll[T any](ctx context.Context, db *DB, op string, scan func(interface{ Scan(...any) error }) (T, error), query string, args ...any) ([]T, error) {
	rows, err := db.read.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return out, nil
}

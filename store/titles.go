package store

import (
	"context"
	"fmt"
)

// SetTitleIfEmpty gives the session title unless it has one already (a person named it
// meanwhile), in one statement so a rename is never overwritten. It reports whether the
// title was set, with the session as it is now.
func (db *DB) SetTitleIfEmpty(ctx context.Context, id, title string) (Session, bool, error) {
	res, err := db.execWrite(ctx, `UPDATE sessions SET title = ?, updated_at = ? WHERE id = ? AND title = ''`, title, now(), id)
	if err != nil {
		return Session{}, false, fmt.Errorf("set the title of session %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return Session{}, false, fmt.Errorf("set the title of session %s: %w", id, err)
	}
	s, err := db.Session(ctx, id)
	return s, n == 1, err
}

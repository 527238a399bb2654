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

// ModelUsage is the tokens a session's answers of one model used.
type ModelUsage struct {
	Provider  string `json:"provider"`
	Model     string `json:"model"`
	TokensIn  int64  `json:"tokensIn"`
	TokensOut int64  `json:"tokensOut"`
}

// SessionSummary is what a list of sessions shows beside the title: the start of the
// person's last message, and the tokens used by model.
type SessionSummary struct {
	Preview string
	Usage   []ModelUsage
}

// maxPreview is the length of a session's preview, in bytes.
const maxPreview = 160

// Summary returns the session's preview and token usage by model.
func (db *DB) Summary(ctx context.Context, id string) (SessionSummary, error) {
	var out SessionSummary
	err := db.read.QueryRowContext(ctx, `SELECT COALESCE((SELECT substr(content, 1, ?) FROM messages
		WHERE session_id = ? AND role = 'user' AND content <> '' ORDER BY seq DESC LIMIT 1), '')`, maxPreview, id).Scan(&out.Preview)
	if err != nil {
		return out, fmt.Errorf("summary of session %s: %w", id, err)
	}
	rows, err := db.read.QueryContext(ctx, `SELECT provider, model, SUM(tokens_in), SUM(tokens_out) FROM messages
		WHERE session_id = ? AND role = 'assistant' AND (tokens_in > 0 OR tokens_out > 0) GROUP BY provider, model ORDER BY model`, id)
	if err != nil {
		return out, fmt.Errorf("usage of session %s: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var u ModelUsage
		if err := rows.Scan(&u.Provider, &u.Model, &u.TokensIn, &u.TokensOut); err != nil {
			return out, fmt.Errorf("usage of session %s: %w", id, err)
		}
		out.Usage = append(out.Usage, u)
	}
	return out, rows.Err()
}

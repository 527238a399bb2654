package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// CutMessagesFrom is DB.DeleteMessagesFrom within the batch, so the cut and the event that
// announces it are one commit (editing a message, regenerating an answer).
func (tx *Tx) CutMessagesFrom(ctx context.Context, sessionID string, seq int64) (int64, error) {
	res, err := tx.tx.ExecContext(ctx, `DELETE FROM messages WHERE session_id = ? AND seq >= ?`, sessionID, seq)
	if err != nil {
		return 0, fmt.Errorf("delete messages of session %s from %d: %w", sessionID, seq, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("delete messages of session %s from %d: %w", sessionID, seq, err)
	}
	return n, nil
}

// ErrUnfinished is returned by ForkSession when a message to copy is still being written.
var ErrUnfinished = errors.New("a message to copy is still being written; wait for its turn to end")

// ForkSession makes a new session in the workspace of session srcID, with its provider and
// model and the given title, holding copies of its messages up to and with seq (their
// parts, images included, under new ids). The copies keep their numbers and times. What
// belongs to the original's turns stays with it: ledgers and undo snapshots (so Restore to
// here works on the original only).
func (db *DB) ForkSession(ctx context.Context, srcID string, seq int64, title string) (Session, error) {
	src, err := db.Session(ctx, srcID)
	if err != nil {
		return Session{}, fmt.Errorf("fork session %s: %w", srcID, err)
	}
	out := Session{ID: NewID("ses_"), WorkspaceID: src.WorkspaceID, Title: title, Provider: src.Provider, Model: src.Model, Agent: src.Agent}
	err = db.batch(ctx, func(tx *Tx) error {
		t := now()
		out.CreatedAt, out.UpdatedAt = toTime(t), toTime(t)
		if _, err := tx.tx.ExecContext(ctx, `INSERT INTO sessions (id, workspace_id, title, provider, model, agent, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, out.ID, out.WorkspaceID, out.Title, out.Provider, out.Model, out.Agent, t, t); err != nil {
			return fmt.Errorf("create the fork: %w", err)
		}
		rows, err := tx.tx.QueryContext(ctx, `SELECT id, status FROM messages WHERE session_id = ? AND seq <= ? ORDER BY seq`, srcID, seq)
		if err != nil {
			return fmt.Errorf("list the messages to copy: %w", err)
		}
		type msg struct{ id, status string }
		var msgs []msg
		for rows.Next() {
			var m msg
			if err := rows.Scan(&m.id, &m.status); err != nil {
				rows.Close()
				return err
			}
			msgs = append(msgs, m)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, m := range msgs {
			if Status(m.status) == StatusStreaming {
				return fmt.Errorf("message %s: %w", m.id, ErrUnfinished)
			}
			id := NewID("msg_")
			if _, err := tx.tx.ExecContext(ctx, `INSERT INTO messages (id, session_id, seq, role, content, status, provider, model, finish, error, tokens_in, tokens_out, created_at, updated_at)
				SELECT ?, ?, seq, role, content, status, provider, model, finish, error, tokens_in, tokens_out, created_at, updated_at FROM messages WHERE id = ?`,
				id, out.ID, m.id); err != nil {
				return fmt.Errorf("copy message %s: %w", m.id, err)
			}
			if err := copyParts(ctx, tx.tx, m.id, id); err != nil {
				return fmt.Errorf("copy the parts of message %s: %w", m.id, err)
			}
		}
		return nil
	})
	if err != nil {
		return Session{}, wrapBatch(err, "fork session %s at message %d", srcID, seq)
	}
	return out, nil
}

func copyParts(ctx context.Context, tx *sql.Tx, from, to string) error {
	rows, err := tx.QueryContext(ctx, `SELECT id FROM parts WHERE message_id = ? ORDER BY seq`, from)
	if err != nil {
		return err
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := tx.ExecContext(ctx, `INSERT INTO parts (id, message_id, seq, kind, text, tool_name, call_id, args, result, visualization, status, duration_ms, error, media_type, data, created_at, updated_at, tool_hash)
			SELECT ?, ?, seq, kind, text, tool_name, call_id, args, result, visualization, status, duration_ms, error, media_type, data, created_at, updated_at, tool_hash FROM parts WHERE id = ?`,
			NewID("prt_"), to, id); err != nil {
			return err
		}
	}
	return nil
}

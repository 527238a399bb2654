package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"
)

// UndoState is what a turn left at one path when it ended: the state a later restore expects
// to find there if nothing outside jean2 touched the path since (package undo).
type UndoState struct {
	Path   string      `json:"path"`
	Exists bool        `json:"exists"`
	Kind   string      `json:"kind,omitempty"` // file, dir, symlink or other
	Mode   fs.FileMode `json:"mode,omitempty"`
	Size   int64       `json:"size,omitempty"`
	// Hash is the SHA-256 of a file's content; nil when the file was too large to read, and
	// then Size and ModTime (Unix nanoseconds) stand in for it.
	Hash    []byte `json:"hash,omitempty"`
	Target  string `json:"target,omitempty"` // a symlink's target
	ModTime int64  `json:"modTime,omitempty"`
}

// UndoTurn is the undo record of one turn: what it left at each path of its ledger, filed
// under the same message as the ledger.
type UndoTurn struct {
	MessageID string      `json:"messageId"`
	SessionID string      `json:"sessionId"`
	TurnID    string      `json:"turnId,omitempty"`
	CreatedAt time.Time   `json:"createdAt"`
	After     []UndoState `json:"after"`
}

var undoKinds = map[string]bool{"": true, "file": true, "dir": true, "symlink": true, "other": true}

// SaveUndoTurn stores a turn's undo record under its message, replacing one saved there
// before, in one transaction. It is written before the turn's ledger (FileLedger), so every
// ledger filed this way has its record; a record whose ledger never came (a crash between
// the two) is ignored and replaced by the next save. The message must belong to the session
// and must not have a ledger yet (ErrConflict).
func (db *DB) SaveUndoTurn(ctx context.Context, t UndoTurn) error {
	err := db.batch(ctx, func(tx *Tx) error { return tx.SaveUndoTurn(ctx, t) })
	return wrapBatch(err, "save undo record of session %s under message %s", t.SessionID, t.MessageID)
}

// SaveUndoTurn is DB.SaveUndoTurn within the batch: a turn files its record and its ledger
// in one transaction, fenced by its lease (undo.Turn.FileIn).
func (tx *Tx) SaveUndoTurn(ctx context.Context, t UndoTurn) error {
	for _, st := range t.After {
		if st.Path == "" || !undoKinds[st.Kind] {
			return fmt.Errorf("save undo record of message %s: state %+v: empty path or unknown kind", t.MessageID, st)
		}
	}
	if err := saveUndoTurn(ctx, tx.tx, t); err != nil {
		return fmt.Errorf("save undo record of session %s under message %s: %w", t.SessionID, t.MessageID, err)
	}
	return nil
}

func saveUndoTurn(ctx context.Context, tx *sql.Tx, t UndoTurn) error {
	var owner string
	err := tx.QueryRowContext(ctx, `SELECT session_id FROM messages WHERE id = ?`, t.MessageID).Scan(&owner)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("message %s: %w", t.MessageID, ErrNotFound)
	}
	if err != nil {
		return err
	}
	if owner != t.SessionID {
		return fmt.Errorf("message %s belongs to session %s, not %s", t.MessageID, owner, t.SessionID)
	}
	var ledgers int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM ledgers WHERE message_id = ?`, t.MessageID).Scan(&ledgers); err != nil {
		return err
	}
	if ledgers > 0 {
		return fmt.Errorf("message %s already has a ledger: %w", t.MessageID, ErrConflict)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM undo_turns WHERE message_id = ?`, t.MessageID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO undo_turns (message_id, session_id, turn_id, created_at) VALUES (?, ?, ?, ?)`,
		t.MessageID, t.SessionID, t.TurnID, fromTime(t.CreatedAt)); err != nil {
		return err
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO undo_after_states (message_id, path, present, kind, mode, size, hash, target, mod_time)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, st := range t.After {
		if _, err := stmt.ExecContext(ctx, t.MessageID, st.Path, st.Exists, st.Kind, int64(st.Mode), st.Size,
			st.Hash, st.Target, st.ModTime); err != nil {
			if isUnique(err) {
				return fmt.Errorf("path %s is named twice: %w", st.Path, ErrConflict)
			}
			return fmt.Errorf("path %s: %w", st.Path, err)
		}
	}
	return nil
}

// UndoTurns returns the undo records filed under the given messages, by message id. A
// message without one is absent from the map.
func (db *DB) UndoTurns(ctx context.Context, messageIDs ...string) (map[string]UndoTurn, error) {
	out := make(map[string]UndoTurn, len(messageIDs))
	if len(messageIDs) == 0 {
		return out, nil
	}
	// Batches keep the statement under SQLite's limit on bound parameters.
	const batch = 500
	for start := 0; start < len(messageIDs); start += batch {
		ids := messageIDs[start:min(start+batch, len(messageIDs))]
		if err := db.undoTurns(ctx, ids, out); err != nil {
			return nil, fmt.Errorf("read undo records: %w", err)
		}
	}
	return out, nil
}

func (db *DB) undoTurns(ctx context.Context, ids []string, out map[string]UndoTurn) error {
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", ")
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	tx, err := db.read.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // read-only: nothing to undo
	rows, err := tx.QueryContext(ctx, `SELECT message_id, session_id, turn_id, created_at FROM undo_turns WHERE message_id IN (`+marks+`)`, args...)
	if err != nil {
		return err
	}
	for rows.Next() {
		var t UndoTurn
		var created int64
		if err := rows.Scan(&t.MessageID, &t.SessionID, &t.TurnID, &created); err != nil {
			rows.Close()
			return err
		}
		t.CreatedAt = toTime(created)
		t.After = []UndoState{}
		out[t.MessageID] = t
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	srows, err := tx.QueryContext(ctx, `SELECT message_id, path, present, kind, mode, size, hash, target, mod_time
		FROM undo_after_states WHERE message_id IN (`+marks+`) ORDER BY message_id, path`, args...)
	if err != nil {
		return err
	}
	defer srows.Close()
	for srows.Next() {
		var id string
		var st UndoState
		var mode int64
		if err := srows.Scan(&id, &st.Path, &st.Exists, &st.Kind, &mode, &st.Size, &st.Hash, &st.Target, &st.ModTime); err != nil {
			return err
		}
		st.Mode = fs.FileMode(mode)
		if t, ok := out[id]; ok {
			t.After = append(t.After, st)
			out[id] = t
		}
	}
	return srows.Err()
}

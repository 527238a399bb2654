package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/jean2/jean2/tool"
)

// Ledger is one turn's list of changes, filed under the turn's last assistant message.
type Ledger struct {
	ID         string        `json:"id"`
	SessionID  string        `json:"sessionId"`
	MessageID  string        `json:"messageId"`
	MessageSeq int64         `json:"messageSeq"` // the Seq of the message it is filed under
	CreatedAt  time.Time     `json:"createdAt"`
	RestoredAt time.Time     `json:"restoredAt,omitzero"` // zero until MarkRestored
	Changes    []tool.Change `json:"changes"`             // in the order recorded
}

// FileLedger stores a turn's changes under the message the turn drew, in one transaction.
// The message must belong to sessionID; a message holds at most one ledger (ErrConflict).
// Change times are kept to the millisecond.
func (db *DB) FileLedger(ctx context.Context, sessionID, messageID string, changes []tool.Change) (Ledger, error) {
	var l Ledger
	err := db.batch(ctx, func(tx *Tx) error {
		var err error
		l, err = tx.FileLedger(ctx, sessionID, messageID, changes)
		return err
	})
	if err != nil {
		return Ledger{}, wrapBatch(err, "file ledger of session %s under message %s", sessionID, messageID)
	}
	return l, nil
}

// FileLedger is DB.FileLedger within the batch.
func (tx *Tx) FileLedger(ctx context.Context, sessionID, messageID string, changes []tool.Change) (Ledger, error) {
	l := Ledger{ID: NewID("led_"), SessionID: sessionID, MessageID: messageID, Changes: changes}
	if l.Changes == nil {
		l.Changes = []tool.Change{}
	}
	t := now()
	l.CreatedAt = toTime(t)
	if err := tx.fileLedger(ctx, &l, t); err != nil {
		return Ledger{}, fmt.Errorf("file ledger of session %s under message %s: %w", sessionID, messageID, err)
	}
	return l, nil
}

func (tx *Tx) fileLedger(ctx context.Context, l *Ledger, t int64) error {
	var owner string
	err := tx.stmt(ctx, stmtMessageOwner).QueryRowContext(ctx, l.MessageID).Scan(&owner, &l.MessageSeq)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("message %s: %w", l.MessageID, ErrNotFound)
	}
	if err != nil {
		return err
	}
	if owner != l.SessionID {
		return fmt.Errorf("message %s belongs to session %s, not %s", l.MessageID, owner, l.SessionID)
	}
	_, err = tx.stmt(ctx, stmtInsertLedger).ExecContext(ctx, l.ID, l.SessionID, l.MessageID, t)
	if isUnique(err) {
		return fmt.Errorf("message %s already has a ledger: %w", l.MessageID, ErrConflict)
	}
	if err != nil {
		return err
	}
	if len(l.Changes) == 0 {
		return nil
	}
	insert := tx.stmt(ctx, stmtInsertLedgerChange)
	for i, c := range l.Changes {
		state, data, err := encodeState(c.Before)
		if err != nil {
			return fmt.Errorf("change %d (%s): %w", i+1, c.Path, err)
		}
		if _, err := insert.ExecContext(ctx, l.ID, i+1, c.Path, c.Tool, c.CallID, c.Op, c.Disk, c.OK, c.Error,
			fromTime(c.At), state, data); err != nil {
			return fmt.Errorf("change %d (%s): %w", i+1, c.Path, err)
		}
	}
	return nil
}

const ledgerColumns = `l.id, l.session_id, l.message_id, m.seq, l.created_at, l.restored_at`

// LedgerForMessage returns the ledger filed under a message, with its changes.
func (db *DB) LedgerForMessage(ctx context.Context, messageID string) (Ledger, error) {
	ls, err := db.ledgers(ctx, `l.message_id = ?`, messageID)
	if err == nil && len(ls) == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return Ledger{}, fmt.Errorf("get ledger of message %s: %w", messageID, err)
	}
	return ls[0], nil
}

// ListLedgers returns the ledgers of a session in the order of their messages.
func (db *DB) ListLedgers(ctx context.Context, sessionID string) ([]Ledger, error) {
	ls, err := db.ledgers(ctx, `l.session_id = ?`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("list ledgers of session %s: %w", sessionID, err)
	}
	return ls, nil
}

// RestorePoint returns what "Restore to here" at a message has to undo: the ledgers filed
// under that message or under any later message of its session, oldest first, each with
// its changes in the order recorded. For a user message that is every turn from the one
// it started; for an assistant message, its own turn and the ones after. Hand the changes
// of all of them, in this order, to toolfs.Restore (see AllChanges): it puts every path
// back as it was before the earliest of them. Ledgers already restored are included; their
// RestoredAt says so.
func (db *DB) RestorePoint(ctx context.Context, messageID string) ([]Ledger, error) {
	var sessionID string
	var seq int64
	err := db.read.QueryRowContext(ctx, `SELECT session_id, seq FROM messages WHERE id = ?`, messageID).Scan(&sessionID, &seq)
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("restore point at message %s: %w", messageID, err)
	}
	ls, err := db.ledgers(ctx, `l.session_id = ? AND m.seq >= ?`, sessionID, seq)
	if err != nil {
		return nil, fmt.Errorf("restore point at message %s: %w", messageID, err)
	}
	return ls, nil
}

// AllChanges returns the changes of ledgers one after another, in the order given.
func AllChanges(ledgers []Ledger) []tool.Change {
	var out []tool.Change
	for _, l := range ledgers {
		out = append(out, l.Changes...)
	}
	return out
}

// MarkRestored records that the ledgers were restored, now.
func (db *DB) MarkRestored(ctx context.Context, ledgerIDs ...string) error {
	t := now()
	return db.tx(ctx, func(tx *sql.Tx) error {
		for _, id := range ledgerIDs {
			if err := affected(tx.ExecContext(ctx, `UPDATE ledgers SET restored_at = ? WHERE id = ?`, t, id)); err != nil {
				return fmt.Errorf("mark ledger %s restored: %w", id, err)
			}
		}
		return nil
	})
}

// ledgers returns the ledgers matching where (over ledgers l joined with messages m), in
// message order, with their changes, read in one transaction.
func (db *DB) ledgers(ctx context.Context, where string, args ...any) ([]Ledger, error) {
	tx, err := db.read.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback() //nolint:errcheck // read-only: nothing to undo
	rows, err := tx.QueryContext(ctx, `SELECT `+ledgerColumns+` FROM ledgers l JOIN messages m ON m.id = l.message_id
		WHERE `+where+` ORDER BY m.seq`, args...)
	if err != nil {
		return nil, err
	}
	var out []Ledger
	index := map[string]int{}
	for rows.Next() {
		var l Ledger
		var created int64
		var restored sql.NullInt64
		if err := rows.Scan(&l.ID, &l.SessionID, &l.MessageID, &l.MessageSeq, &created, &restored); err != nil {
			rows.Close()
			return nil, err
		}
		l.CreatedAt, l.RestoredAt = toTime(created), nullTime(restored)
		l.Changes = []tool.Change{}
		index[l.ID] = len(out)
		out = append(out, l)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return []Ledger{}, nil
	}
	crows, err := tx.QueryContext(ctx, `SELECT c.ledger_id, c.path, c.tool, c.call_id, c.op, c.disk, c.ok, c.error, c.at, c.before_state, c.before_data
		FROM ledger_changes c WHERE c.ledger_id IN (SELECT l.id FROM ledgers l JOIN messages m ON m.id = l.message_id WHERE `+where+`)
		ORDER BY c.ledger_id, c.seq`, args...)
	if err != nil {
		return nil, err
	}
	defer crows.Close()
	for crows.Next() {
		var ledgerID string
		var c tool.Change
		var at int64
		var state sql.NullString
		var data []byte
		if err := crows.Scan(&ledgerID, &c.Path, &c.Tool, &c.CallID, &c.Op, &c.Disk, &c.OK, &c.Error, &at, &state, &data); err != nil {
			return nil, err
		}
		c.At = toTime(at)
		if state.Valid {
			if c.Before, err = decodeState(state.String, data); err != nil {
				return nil, fmt.Errorf("ledger %s, change to %s: before-state: %w", ledgerID, c.Path, err)
			}
		}
		if i, ok := index[ledgerID]; ok {
			out[i].Changes = append(out[i].Changes, c)
		}
	}
	return out, crows.Err()
}

// stateRecord is a tool.FileState as stored: each file's content is a span of the change's
// before_data blob instead of base64 inside the JSON.
type stateRecord struct {
	Exists     bool          `json:"exists"`
	IsDir      bool          `json:"isDir,omitempty"`
	Mode       fs.FileMode   `json:"mode,omitempty"`
	Off        int64         `json:"off,omitempty"`
	Len        int64         `json:"len,omitempty"`
	Entries    []entryRecord `json:"entries,omitempty"`
	Incomplete string        `json:"incomplete,omitempty"`
}

type entryRecord struct {
	Name  string      `json:"name"`
	State stateRecord `json:"state"`
}

// encodeState splits s into its JSON shape and its contents back to back; nil s gives
// NULLs.
func encodeState(s *tool.FileState) (any, any, error) {
	if s == nil {
		return nil, nil, nil
	}
	var data bytes.Buffer
	rec := toRecord(*s, &data)
	shape, err := json.Marshal(rec)
	if err != nil {
		return nil, nil, err
	}
	// A non-nil empty slice, so an empty file's state is stored with an empty blob, not NULL.
	return string(shape), append([]byte{}, data.Bytes()...), nil
}

func toRecord(s tool.FileState, data *bytes.Buffer) stateRecord {
	r := stateRecord{Exists: s.Exists, IsDir: s.IsDir, Mode: s.Mode, Incomplete: s.Incomplete}
	if len(s.Content) > 0 {
		r.Off, r.Len = int64(data.Len()), int64(len(s.Content))
		data.Write(s.Content)
	}
	for _, e := range s.Entries {
		r.Entries = append(r.Entries, entryRecord{Name: e.Name, State: toRecord(e.State, data)})
	}
	return r
}

func decodeState(shape string, data []byte) (*tool.FileState, error) {
	var rec stateRecord
	if err := json.Unmarshal([]byte(shape), &rec); err != nil {
		return nil, err
	}
	s, err := fromRecord(rec, data)
	if err != nil {
		return nil, err
	}
	return &s, nil
}

func fromRecord(r stateRecord, data []byte) (tool.FileState, error) {
	s := tool.FileState{Exists: r.Exists, IsDir: r.IsDir, Mode: r.Mode, Incomplete: r.Incomplete}
	if r.Len > 0 {
		if r.Off < 0 || r.Len < 0 || r.Off+r.Len > int64(len(data)) {
			return tool.FileState{}, fmt.Errorf("content span %d+%d lies outside the %d stored bytes", r.Off, r.Len, len(data))
		}
		s.Content = bytes.Clone(data[r.Off : r.Off+r.Len])
	}
	for _, e := range r.Entries {
		es, err := fromRecord(e.State, data)
		if err != nil {
			return tool.FileState{}, fmt.Errorf("%s: %w", e.Name, err)
		}
		s.Entries = append(s.Entries, tool.DirState{Name: e.Name, State: es})
	}
	return s, nil
}

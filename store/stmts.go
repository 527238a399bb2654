package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// stmtID names one of the statements an agent's turn runs over and over. They are
// prepared once when the database opens: SQLite (modernc) parses a statement from text
// every time it is run otherwise, and parsing was the larger part of a small write's cost.
type stmtID int

// The hot statements: the writes of a turn's rounds (on the writer) and the reads made at
// every round (on the readers).
const (
	stmtTouchSession stmtID = iota
	stmtInsertMessage
	stmtUpdateMessage
	stmtInsertPart
	stmtInsertPartNextSeq
	stmtUpdatePart
	stmtAppendPartText
	stmtBumpSessionEventSeq
	stmtBumpEventSeq
	stmtMessageOwner
	stmtInsertLedger
	stmtInsertLedgerChange
	stmtOpenTurn
	stmtCloseTurn

	numWriteStmts
)

const (
	stmtReadSession stmtID = iota
	stmtReadWorkspace
	stmtListMessages
	stmtListParts
	stmtReadSessionWorkspace

	numReadStmts
)

var writeStmtText = [numWriteStmts]string{
	stmtTouchSession: `UPDATE sessions SET updated_at = MAX(updated_at, ?) WHERE id = ?`,
	// The message's seq is the next of its session, found in the same statement.
	stmtInsertMessage: `INSERT INTO messages (id, session_id, seq, role, content, status, provider, model, finish, error, tokens_in, tokens_out, created_at, updated_at)
		VALUES (?1, ?2, (SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE session_id = ?2), ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12)
		RETURNING seq`,
	stmtUpdateMessage: `UPDATE messages SET content = ?, status = ?, provider = ?, model = ?, finish = ?, error = ?,
		tokens_in = ?, tokens_out = ?, updated_at = ? WHERE id = ?`,
	// A part whose seq the caller knows (the parts of a message being added with it).
	stmtInsertPart: `INSERT INTO parts (id, message_id, seq, kind, text, tool_name, call_id, args, result, visualization, status, duration_ms, error, media_type, data, created_at, updated_at, tool_hash)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
	// A part added to a stored message: the next seq of the message.
	stmtInsertPartNextSeq: `INSERT INTO parts (id, message_id, seq, kind, text, tool_name, call_id, args, result, visualization, status, duration_ms, error, media_type, data, created_at, updated_at, tool_hash)
		VALUES (?1, ?2, (SELECT COALESCE(MAX(seq), 0) + 1 FROM parts WHERE message_id = ?2), ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?15, ?16)
		RETURNING seq`,
	stmtUpdatePart: `UPDATE parts SET text = ?, tool_name = ?, call_id = ?, args = ?, result = ?, visualization = ?,
		status = ?, duration_ms = ?, error = ?, media_type = ?, data = ?, tool_hash = ?, updated_at = ? WHERE id = ?`,
	stmtAppendPartText: `UPDATE parts SET text = text || ?, updated_at = ? WHERE id = ?`,
	// A session's log is numbered in its row (written by the batch's message anyway); a
	// log without a session row (the server's, "") in event_seqs.
	// (updated_at moves too when the batch added a message: 0 leaves it.)
	stmtBumpSessionEventSeq: `UPDATE sessions SET last_event_seq = last_event_seq + ?, updated_at = MAX(updated_at, ?)
		WHERE id = ? RETURNING last_event_seq`,
	stmtBumpEventSeq: `INSERT INTO event_seqs (session_id, last_seq) VALUES (?, ?)
		ON CONFLICT (session_id) DO UPDATE SET last_seq = event_seqs.last_seq + excluded.last_seq
		RETURNING last_seq`,
	stmtMessageOwner: `SELECT session_id, seq FROM messages WHERE id = ?`,
	stmtInsertLedger: `INSERT INTO ledgers (id, session_id, message_id, created_at) VALUES (?, ?, ?, ?)`,
	stmtInsertLedgerChange: `INSERT INTO ledger_changes (ledger_id, seq, path, tool, call_id, op, disk, ok, error, at, before_state, before_data)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
	stmtOpenTurn: `UPDATE sessions SET open_turn_id = ?, open_turn_user_message_id = ?, open_turn_started_at = ? WHERE id = ?`,
	stmtCloseTurn: `UPDATE sessions SET open_turn_id = '', open_turn_user_message_id = '', open_turn_started_at = 0
		WHERE id = ? AND open_turn_id = ?`,
}

var readStmtText = [numReadStmts]string{
	stmtReadSession:   `SELECT ` + sessionColumns + ` FROM sessions WHERE id = ?`,
	stmtReadWorkspace: `SELECT ` + workspaceColumns + ` FROM workspaces WHERE id = ?`,
	stmtListMessages: `SELECT ` + messageColumns + ` FROM messages WHERE session_id = ? AND seq > ?
		ORDER BY seq LIMIT ?`,
	stmtReadSessionWorkspace: `SELECT s.id, s.workspace_id, s.title, s.provider, s.model, s.agent, s.created_at, s.updated_at,
		w.id, w.name, w.path, w.allowed_paths, w.created_at, w.updated_at
		FROM sessions s JOIN workspaces w ON w.id = s.workspace_id WHERE s.id = ?`,
	stmtListParts: partsQuery(`message_id IN (SELECT id FROM messages WHERE session_id = ? AND seq BETWEEN ? AND ?)`),
}

// maxEventRows is the most events one prepared INSERT stores: a batch's events go in as
// few statements as that allows, one statement costing about as much as a row.
const maxEventRows = 8

// insertEventsText is the INSERT of n events.
func insertEventsText(n int) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO events (session_id, seq, type, payload, created_at) VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?, ?, ?)")
	}
	return b.String()
}

// prepared holds the hot statements, prepared on the writer and on the readers. A
// *sql.Stmt prepares itself again on a connection that does not have it yet, so the
// readers' pool may grow and shrink freely.
type prepared struct {
	write [numWriteStmts]*sql.Stmt
	read  [numReadStmts]*sql.Stmt
	// events[n-1] inserts n events.
	events [maxEventRows]*sql.Stmt
}

func (db *DB) prepare(ctx context.Context) error {
	for id, text := range writeStmtText {
		s, err := db.write.PrepareContext(ctx, text)
		if err != nil {
			return fmt.Errorf("prepare statement %d: %w", id, err)
		}
		db.stmts.write[id] = s
	}
	for i := range db.stmts.events {
		s, err := db.write.PrepareContext(ctx, insertEventsText(i+1))
		if err != nil {
			return fmt.Errorf("prepare the insert of %d events: %w", i+1, err)
		}
		db.stmts.events[i] = s
	}
	for id, text := range readStmtText {
		s, err := db.read.PrepareContext(ctx, text)
		if err != nil {
			return fmt.Errorf("prepare read statement %d: %w", id, err)
		}
		db.stmts.read[id] = s
	}
	return nil
}

func (p *prepared) close() {
	for _, s := range p.write {
		if s != nil {
			_ = s.Close()
		}
	}
	for _, s := range p.read {
		if s != nil {
			_ = s.Close()
		}
	}
	for _, s := range p.events {
		if s != nil {
			_ = s.Close()
		}
	}
}

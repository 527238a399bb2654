package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// lastCompactionQuery finds the newest compaction part of a session. It walks the
// session's messages newest first through their (session_id, seq) key and stops at the
// first compaction (LIMIT 1), so it reads the messages since the last compaction, the
// ones the turn reads anyway, not the whole history. (A compaction's message has one
// part; ordering by the part too would make the database sort instead.)
const lastCompactionQuery = `SELECT p.args FROM messages m JOIN parts p ON p.message_id = m.id
	WHERE m.session_id = ? AND m.role = 'system' AND p.kind = 'compaction'
	ORDER BY m.seq DESC LIMIT 1`

// LastCompaction returns what the session's newest compaction replaced; ok is false when
// the session was never compacted.
func (db *DB) LastCompaction(ctx context.Context, sessionID string) (info CompactionInfo, ok bool, err error) {
	var args sql.NullString
	err = db.read.QueryRowContext(ctx, lastCompactionQuery, sessionID).Scan(&args)
	if errors.Is(err, sql.ErrNoRows) {
		return CompactionInfo{}, false, nil
	}
	if err != nil {
		return CompactionInfo{}, false, fmt.Errorf("last compaction of session %s: %w", sessionID, err)
	}
	if err := json.Unmarshal([]byte(args.String), &info); err != nil {
		return CompactionInfo{}, false, fmt.Errorf("last compaction of session %s: its args %q: %w", sessionID, args.String, err)
	}
	return info, true, nil
}

// LiveMessages returns the messages of a session a model is sent, with their parts: after
// the newest compaction's UpToSeq (the compaction's own message among them), or all of
// them when the session was never compacted. A session kept within its model's window by
// compaction is read in about the same time at its thousandth turn as at its tenth.
func (db *DB) LiveMessages(ctx context.Context, sessionID string) ([]Message, error) {
	info, _, err := db.LastCompaction(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	return db.ListMessagesAfter(ctx, sessionID, info.UpToSeq, 0)
}

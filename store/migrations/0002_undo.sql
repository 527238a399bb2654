-- What each turn left on disk at the paths its ledger names (package undo), so that a later
-- "Restore to here" can tell a file changed outside jean2 since (what stands there now is not
-- what jean2 left) and refuse instead of overwriting it. One row per turn, keyed by the
-- message its ledger is filed under; written just before the ledger.

CREATE TABLE undo_turns (
    message_id TEXT PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    turn_id    TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX undo_turns_by_session ON undo_turns (session_id);

-- present = 0: nothing stood at path. kind: file, dir, symlink or other. hash is the SHA-256
-- of a file's content, NULL when the file was too large to read (size and mod_time, in
-- nanoseconds, stand in for it then). target is a symlink's target.
CREATE TABLE undo_after_states (
    message_id TEXT NOT NULL REFERENCES undo_turns(message_id) ON DELETE CASCADE,
    path       TEXT NOT NULL,
    present    INTEGER NOT NULL CHECK (present IN (0, 1)),
    kind       TEXT NOT NULL DEFAULT '' CHECK (kind IN ('', 'file', 'dir', 'symlink', 'other')),
    mode       INTEGER NOT NULL DEFAULT 0,
    size       INTEGER NOT NULL DEFAULT 0,
    hash       BLOB,
    target     TEXT NOT NULL DEFAULT '',
    mod_time   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (message_id, path)
) STRICT, WITHOUT ROWID;

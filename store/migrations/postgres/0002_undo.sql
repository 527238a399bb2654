-- What each turn left on disk at the paths its ledger names (package undo); as SQLite's
-- migrations/0002_undo.sql.

CREATE TABLE undo_turns (
    message_id text COLLATE "C" PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
    session_id text COLLATE "C" NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    turn_id    text COLLATE "C" NOT NULL DEFAULT '',
    created_at bigint NOT NULL
);
CREATE INDEX undo_turns_by_session ON undo_turns (session_id);

CREATE TABLE undo_after_states (
    message_id text COLLATE "C" NOT NULL REFERENCES undo_turns(message_id) ON DELETE CASCADE,
    path       text COLLATE "C" NOT NULL,
    present    bigint NOT NULL CHECK (present IN (0, 1)),
    kind       text NOT NULL DEFAULT '' CHECK (kind IN ('', 'file', 'dir', 'symlink', 'other')),
    mode       bigint NOT NULL DEFAULT 0,
    size       bigint NOT NULL DEFAULT 0,
    hash       bytea,
    target     text NOT NULL DEFAULT '',
    mod_time   bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (message_id, path)
);

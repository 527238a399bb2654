-- The first schema of jean2's database. Times are Unix milliseconds (UTC). Every table is
-- STRICT so a value of the wrong type is refused instead of stored.

CREATE TABLE workspaces (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL DEFAULT '',
    path          TEXT NOT NULL UNIQUE,
    allowed_paths TEXT NOT NULL DEFAULT '[]'
                  CHECK (json_valid(allowed_paths) AND json_type(allowed_paths) = 'array'),
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
) STRICT;

CREATE TABLE sessions (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    title        TEXT NOT NULL DEFAULT '',
    provider     TEXT NOT NULL DEFAULT '',
    model        TEXT NOT NULL DEFAULT '',
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
) STRICT;
CREATE INDEX sessions_by_workspace ON sessions (workspace_id, updated_at);

CREATE TABLE messages (
    id         TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    role       TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'system')),
    content    TEXT NOT NULL DEFAULT '',
    status     TEXT NOT NULL CHECK (status IN ('streaming', 'complete', 'error')),
    provider   TEXT NOT NULL DEFAULT '',
    model      TEXT NOT NULL DEFAULT '',
    finish     TEXT NOT NULL DEFAULT '',
    error      TEXT NOT NULL DEFAULT '',
    tokens_in  INTEGER NOT NULL DEFAULT 0,
    tokens_out INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    UNIQUE (session_id, seq)
) STRICT;

-- A part is one piece of a message: a run of text, or one tool call with its outcome.
-- args is kept verbatim as the model wrote it (it may not parse); result is what the model
-- sees of the outcome (usually JSON, a preview when it overflowed); visualization is for
-- people only and never goes back to the model.
CREATE TABLE parts (
    id            TEXT PRIMARY KEY,
    message_id    TEXT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL,
    kind          TEXT NOT NULL CHECK (kind IN ('text', 'tool_call', 'tool_result')),
    text          TEXT NOT NULL DEFAULT '',
    tool_name     TEXT NOT NULL DEFAULT '',
    call_id       TEXT NOT NULL DEFAULT '',
    args          TEXT,
    result        TEXT,
    visualization TEXT CHECK (visualization IS NULL OR json_valid(visualization)),
    status        TEXT NOT NULL
                  CHECK (status IN ('streaming', 'pending', 'running', 'complete', 'error')),
    duration_ms   INTEGER NOT NULL DEFAULT 0,
    error         TEXT NOT NULL DEFAULT '',
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    UNIQUE (message_id, seq)
) STRICT;

-- One ledger per turn, filed under the turn's last assistant message.
CREATE TABLE ledgers (
    id          TEXT PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    message_id  TEXT NOT NULL UNIQUE REFERENCES messages(id) ON DELETE CASCADE,
    created_at  INTEGER NOT NULL,
    restored_at INTEGER
) STRICT;
CREATE INDEX ledgers_by_session ON ledgers (session_id);

-- before_state is the tool.FileState with every file content replaced by an offset and a
-- length into before_data, which holds the contents back to back as raw bytes.
CREATE TABLE ledger_changes (
    ledger_id    TEXT NOT NULL REFERENCES ledgers(id) ON DELETE CASCADE,
    seq          INTEGER NOT NULL,
    path         TEXT NOT NULL,
    tool         TEXT NOT NULL DEFAULT '',
    call_id      TEXT NOT NULL DEFAULT '',
    op           TEXT NOT NULL DEFAULT '',
    disk         INTEGER NOT NULL CHECK (disk IN (0, 1)),
    ok           INTEGER NOT NULL CHECK (ok IN (0, 1)),
    error        TEXT NOT NULL DEFAULT '',
    at           INTEGER NOT NULL,
    before_state TEXT CHECK (before_state IS NULL OR json_valid(before_state)),
    before_data  BLOB,
    PRIMARY KEY (ledger_id, seq)
) STRICT, WITHOUT ROWID;

-- Remembered permissions (ask.Grant), kept whole as JSON; the columns beside it are for
-- finding and cleaning up.
CREATE TABLE grants (
    id           TEXT PRIMARY KEY,
    tool         TEXT NOT NULL,
    duration     TEXT NOT NULL,
    session_id   TEXT NOT NULL DEFAULT '',
    workspace_id TEXT NOT NULL DEFAULT '',
    granted_at   INTEGER NOT NULL,
    data         TEXT NOT NULL CHECK (json_valid(data))
) STRICT;

-- API tokens: only the SHA-256 of each token is kept.
CREATE TABLE auth_tokens (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL DEFAULT '',
    hash         BLOB NOT NULL UNIQUE,
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER
) STRICT;

-- Events for clients that catch up from a sequence number. session_id '' is the server's
-- own stream. event_seqs keeps the last number handed out, so pruning old events never
-- makes a number come back.
CREATE TABLE events (
    session_id TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    type       TEXT NOT NULL,
    payload    TEXT NOT NULL CHECK (json_valid(payload)),
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq)
) STRICT, WITHOUT ROWID;

CREATE TABLE event_seqs (
    session_id TEXT PRIMARY KEY,
    last_seq   INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

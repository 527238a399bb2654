-- The first schema of jean2's database on PostgreSQL, the same tables as SQLite's
-- migrations/0001_init.sql: times are Unix milliseconds (UTC) in bigint, booleans 0/1 in
-- bigint, bytes in bytea, JSON kept as text (verbatim, as SQLite keeps it) and checked
-- with a cast. Ids, keys and paths are COLLATE "C": they compare and sort byte by byte, as
-- in SQLite, whatever the locale the database was created with.

CREATE TABLE workspaces (
    id            text COLLATE "C" PRIMARY KEY,
    name          text NOT NULL DEFAULT '',
    path          text COLLATE "C" NOT NULL UNIQUE,
    allowed_paths text NOT NULL DEFAULT '[]' CHECK (json_typeof(allowed_paths::json) = 'array'),
    created_at    bigint NOT NULL,
    updated_at    bigint NOT NULL
);

CREATE TABLE sessions (
    id           text COLLATE "C" PRIMARY KEY,
    workspace_id text COLLATE "C" NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    title        text NOT NULL DEFAULT '',
    provider     text NOT NULL DEFAULT '',
    model        text NOT NULL DEFAULT '',
    created_at   bigint NOT NULL,
    updated_at   bigint NOT NULL
);
CREATE INDEX sessions_by_workspace ON sessions (workspace_id, updated_at);

CREATE TABLE messages (
    id         text COLLATE "C" PRIMARY KEY,
    session_id text COLLATE "C" NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq        bigint NOT NULL,
    role       text NOT NULL CHECK (role IN ('user', 'assistant', 'system')),
    content    text NOT NULL DEFAULT '',
    status     text NOT NULL CHECK (status IN ('streaming', 'complete', 'error')),
    provider   text NOT NULL DEFAULT '',
    model      text NOT NULL DEFAULT '',
    finish     text NOT NULL DEFAULT '',
    error      text NOT NULL DEFAULT '',
    tokens_in  bigint NOT NULL DEFAULT 0,
    tokens_out bigint NOT NULL DEFAULT 0,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    UNIQUE (session_id, seq)
);

CREATE TABLE parts (
    id            text COLLATE "C" PRIMARY KEY,
    message_id    text COLLATE "C" NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    seq           bigint NOT NULL,
    kind          text NOT NULL CONSTRAINT parts_kind_check CHECK (kind IN ('text', 'tool_call', 'tool_result')),
    text          text NOT NULL DEFAULT '',
    tool_name     text NOT NULL DEFAULT '',
    call_id       text COLLATE "C" NOT NULL DEFAULT '',
    args          text,
    result        text,
    visualization text CHECK (visualization IS NULL OR visualization::json IS NOT NULL),
    status        text NOT NULL
                  CHECK (status IN ('streaming', 'pending', 'running', 'complete', 'error')),
    duration_ms   bigint NOT NULL DEFAULT 0,
    error         text NOT NULL DEFAULT '',
    created_at    bigint NOT NULL,
    updated_at    bigint NOT NULL,
    UNIQUE (message_id, seq)
);

CREATE TABLE ledgers (
    id          text COLLATE "C" PRIMARY KEY,
    session_id  text COLLATE "C" NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    message_id  text COLLATE "C" NOT NULL UNIQUE REFERENCES messages(id) ON DELETE CASCADE,
    created_at  bigint NOT NULL,
    restored_at bigint
);
CREATE INDEX ledgers_by_session ON ledgers (session_id);

CREATE TABLE ledger_changes (
    ledger_id    text COLLATE "C" NOT NULL REFERENCES ledgers(id) ON DELETE CASCADE,
    seq          bigint NOT NULL,
    path         text COLLATE "C" NOT NULL,
    tool         text NOT NULL DEFAULT '',
    call_id      text COLLATE "C" NOT NULL DEFAULT '',
    op           text NOT NULL DEFAULT '',
    disk         bigint NOT NULL CHECK (disk IN (0, 1)),
    ok           bigint NOT NULL CHECK (ok IN (0, 1)),
    error        text NOT NULL DEFAULT '',
    at           bigint NOT NULL,
    before_state text CHECK (before_state IS NULL OR before_state::json IS NOT NULL),
    before_data  bytea,
    PRIMARY KEY (ledger_id, seq)
);

CREATE TABLE grants (
    id           text COLLATE "C" PRIMARY KEY,
    tool         text NOT NULL,
    duration     text NOT NULL,
    session_id   text COLLATE "C" NOT NULL DEFAULT '',
    workspace_id text COLLATE "C" NOT NULL DEFAULT '',
    granted_at   bigint NOT NULL,
    data         text NOT NULL CHECK (data::json IS NOT NULL)
);

CREATE TABLE auth_tokens (
    id           text COLLATE "C" PRIMARY KEY,
    name         text NOT NULL DEFAULT '',
    hash         bytea NOT NULL UNIQUE,
    created_at   bigint NOT NULL,
    last_used_at bigint
);

CREATE TABLE events (
    session_id text COLLATE "C" NOT NULL,
    seq        bigint NOT NULL,
    type       text NOT NULL,
    payload    text NOT NULL CHECK (payload::json IS NOT NULL),
    created_at bigint NOT NULL,
    PRIMARY KEY (session_id, seq)
);

CREATE TABLE event_seqs (
    session_id text COLLATE "C" PRIMARY KEY,
    last_seq   bigint NOT NULL
);

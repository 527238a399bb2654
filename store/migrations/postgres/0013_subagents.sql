-- Subagents; as SQLite's migrations/0013_subagents.sql.
CREATE TABLE subagents (
    session_id        text COLLATE "C" PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    parent_session_id text COLLATE "C" NOT NULL,
    parent_call_id    text NOT NULL DEFAULT '',
    tools             text,
    instructions      text NOT NULL DEFAULT '',
    agent             text NOT NULL DEFAULT '',
    description       text NOT NULL DEFAULT '',
    created_at        bigint NOT NULL
);
CREATE INDEX subagents_by_parent ON subagents (parent_session_id, created_at);

-- Subagents: a session a `task` call started is a child of the session whose turn made the
-- call. The row says whose child it is, which call started it, and what the parent gave it:
-- the tools it may use (a JSON array; null: the parent's), its own instructions and the
-- agent it was started as. A table of its own, so a session without a parent has no row and
-- the sessions table and its queries stay as they were.
CREATE TABLE subagents (
    session_id        TEXT    PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    parent_session_id TEXT    NOT NULL,
    parent_call_id    TEXT    NOT NULL DEFAULT '',
    tools             TEXT,
    instructions      TEXT    NOT NULL DEFAULT '',
    agent             TEXT    NOT NULL DEFAULT '',
    description       TEXT    NOT NULL DEFAULT '',
    created_at        INTEGER NOT NULL
) STRICT;
CREATE INDEX subagents_by_parent ON subagents (parent_session_id, created_at);

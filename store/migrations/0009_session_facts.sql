-- Session facts: the small JSON values tools keep for a conversation (ctx.session; the
-- built-in todowrite keeps the session's task list under "jean2.todos"). They were held in
-- the harness's memory only, so a restarted server forgot every session's todo list.
CREATE TABLE session_facts (
    session_id TEXT    NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    key        TEXT    NOT NULL,
    value      TEXT    NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, key)
);

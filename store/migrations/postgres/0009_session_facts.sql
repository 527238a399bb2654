-- Session facts; as SQLite's migrations/0009_session_facts.sql.
CREATE TABLE session_facts (
    session_id text COLLATE "C"   NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    key        text COLLATE "C"   NOT NULL,
    value      text   NOT NULL,
    updated_at bigint NOT NULL,
    PRIMARY KEY (session_id, key)
);

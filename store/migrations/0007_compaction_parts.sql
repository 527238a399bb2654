-- A compaction is stored as a part of kind 'compaction' (of a system message the harness
-- adds when it summarizes a session's older rounds): text holds the summary, args a JSON
-- object saying what it replaced ({"upToSeq","messages","tokensBefore","tokensAfter",
-- "manual"}). The model is sent the summary in place of the messages up to upToSeq.
--
-- SQLite cannot change a CHECK constraint in place, so parts is rebuilt with the new kind,
-- as 0005 did. Nothing references parts.

CREATE TABLE parts_new (
    id            TEXT PRIMARY KEY,
    message_id    TEXT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL,
    kind          TEXT NOT NULL CHECK (kind IN ('text', 'tool_call', 'tool_result', 'image', 'compaction')),
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
    media_type    TEXT NOT NULL DEFAULT '',
    data          BLOB,
    CHECK (kind <> 'image' OR (media_type <> '' AND data IS NOT NULL)),
    UNIQUE (message_id, seq)
) STRICT;

INSERT INTO parts_new SELECT id, message_id, seq, kind, text, tool_name, call_id, args, result, visualization, status,
                             duration_ms, error, created_at, updated_at, media_type, data
    FROM parts;

DROP TABLE parts;
ALTER TABLE parts_new RENAME TO parts;

CREATE INDEX parts_unfinished ON parts (message_id) WHERE status IN ('streaming', 'pending', 'running');

-- Images a person sends with a message are kept as parts of kind 'image': media_type says
-- what the bytes in data are. They go back to the model on every later turn, so they must
-- outlive the turn that brought them.
--
-- SQLite cannot change a CHECK constraint in place, so parts is rebuilt with the new kind
-- and columns. Nothing references parts, so dropping the old table touches no other row.
-- data is the last column: a query that does not ask for it never reads its overflow pages.

CREATE TABLE parts_new (
    id            TEXT PRIMARY KEY,
    message_id    TEXT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL,
    kind          TEXT NOT NULL CHECK (kind IN ('text', 'tool_call', 'tool_result', 'image')),
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

INSERT INTO parts_new (id, message_id, seq, kind, text, tool_name, call_id, args, result, visualization, status,
                       duration_ms, error, created_at, updated_at)
    SELECT id, message_id, seq, kind, text, tool_name, call_id, args, result, visualization, status,
           duration_ms, error, created_at, updated_at
    FROM parts;

DROP TABLE parts;
ALTER TABLE parts_new RENAME TO parts;

-- Dropped with the old table (migration 0004); crash recovery needs it back.
CREATE INDEX parts_unfinished ON parts (message_id) WHERE status IN ('streaming', 'pending', 'running');

-- A resource of an imported MCP server that a person attaches to a message is kept as a
-- part of kind 'resource', read once when the message was sent: args holds ResourceInfo
-- as JSON ({"server","workspaceId","uri"}), media_type the resource's MIME type ('' when
-- the server gave none), text a text resource's contents, data a binary one's bytes.
--
-- SQLite cannot change a CHECK constraint in place, so parts is rebuilt with the new kind,
-- as 0005 and 0007 did. Nothing references parts.

CREATE TABLE parts_new (
    id            TEXT PRIMARY KEY,
    message_id    TEXT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL,
    kind          TEXT NOT NULL CHECK (kind IN ('text', 'tool_call', 'tool_result', 'image', 'compaction', 'resource')),
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
    CHECK (kind <> 'resource' OR json_valid(args)),
    UNIQUE (message_id, seq)
) STRICT;

INSERT INTO parts_new SELECT id, message_id, seq, kind, text, tool_name, call_id, args, result, visualization, status,
                             duration_ms, error, created_at, updated_at, media_type, data
    FROM parts;

DROP TABLE parts;
ALTER TABLE parts_new RENAME TO parts;

CREATE INDEX parts_unfinished ON parts (message_id) WHERE status IN ('streaming', 'pending', 'running');

-- The server's preferences, one JSON value per key (the unattended policy, the ask
-- timeout, the harness's budget), changed through the API.
CREATE TABLE settings (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL CHECK (json_valid(value)),
    updated_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

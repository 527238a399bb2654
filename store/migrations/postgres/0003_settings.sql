-- The server's preferences, one JSON value per key; as SQLite's migrations/0003_settings.sql.
CREATE TABLE settings (
    key        text COLLATE "C" PRIMARY KEY,
    value      text NOT NULL CHECK (value::json IS NOT NULL),
    updated_at bigint NOT NULL
);

-- A session's goal; as SQLite's migrations/0016_session_goal.sql.
ALTER TABLE sessions ADD COLUMN goal text NOT NULL DEFAULT '';

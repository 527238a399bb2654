-- The agent a session runs with; as SQLite's migrations/0015_session_agent.sql.
ALTER TABLE sessions ADD COLUMN agent text COLLATE "C" NOT NULL DEFAULT '';

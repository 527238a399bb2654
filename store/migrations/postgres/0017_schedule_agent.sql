-- The agent a schedule's runs use; as SQLite's migrations/0017_schedule_agent.sql.
ALTER TABLE schedules ADD COLUMN agent text COLLATE "C" NOT NULL DEFAULT '';

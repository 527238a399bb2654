-- The agent a schedule's runs use (harness/agents.go), as a session's: '' is the default agent.
ALTER TABLE schedules ADD COLUMN agent TEXT NOT NULL DEFAULT '';

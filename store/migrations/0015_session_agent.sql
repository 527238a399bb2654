-- The agent a session runs with (harness/agents.go): '' is the default agent, build.
ALTER TABLE sessions ADD COLUMN agent TEXT NOT NULL DEFAULT '';

-- A session's goal (harness/goal.go): the completion condition a person set, its budget and
-- state, as JSON; '' when the session has none. Kept on the session's row so it goes with it.
ALTER TABLE sessions ADD COLUMN goal TEXT NOT NULL DEFAULT '';

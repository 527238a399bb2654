-- The same tables as store/migrations/0013_schedules.sql.
-- Scheduled sessions (docs/automation.md, "Scheduled sessions"): a prompt a person asked to
-- be sent on a cron schedule, and one row per occurrence some instance claimed.
--
-- schedules.next_at is the next occurrence not yet handled (Unix ms); an instance claims the
-- occurrences due by moving it on, from the value it read, in the transaction that inserts
-- their schedule_runs row and the run's session. policy is JSON: {allow, deny, answers}.
CREATE TABLE schedules (
    id           TEXT    PRIMARY KEY,
    workspace_id TEXT    NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    name         TEXT    NOT NULL DEFAULT '',
    prompt       TEXT    NOT NULL,
    cron         TEXT    NOT NULL,
    time_zone    TEXT    NOT NULL,
    provider     TEXT    NOT NULL DEFAULT '',
    model        TEXT    NOT NULL DEFAULT '',
    policy       TEXT    NOT NULL DEFAULT '{}',
    catch_up     TEXT    NOT NULL DEFAULT 'once' CHECK (catch_up IN ('once', 'skip')),
    paused       INTEGER NOT NULL DEFAULT 0,
    next_at      BIGINT  NOT NULL,
    created_at   BIGINT  NOT NULL,
    updated_at   BIGINT  NOT NULL
);
CREATE INDEX schedules_due ON schedules (next_at) WHERE paused = 0;
CREATE INDEX schedules_by_workspace ON schedules (workspace_id);

-- schedule_runs: one row per occurrence claimed, its primary key the claim itself. covers is
-- how many occurrences it stands for (more than one after jean2 was down: catch-up). A run
-- has a session, kept when the schedule goes; a skipped catch-up has none.
CREATE TABLE schedule_runs (
    schedule_id   TEXT    NOT NULL REFERENCES schedules(id) ON DELETE CASCADE,
    occurrence_at BIGINT  NOT NULL,
    covers        INTEGER NOT NULL DEFAULT 1,
    session_id    TEXT    REFERENCES sessions(id) ON DELETE SET NULL,
    instance_id   TEXT    NOT NULL DEFAULT '',
    status        TEXT    NOT NULL,
    reason        TEXT    NOT NULL DEFAULT '',
    error         TEXT    NOT NULL DEFAULT '',
    refusals      TEXT    NOT NULL DEFAULT '[]',
    started_at    BIGINT  NOT NULL,
    finished_at   BIGINT,
    PRIMARY KEY (schedule_id, occurrence_at)
);
CREATE UNIQUE INDEX schedule_runs_by_session ON schedule_runs (session_id);

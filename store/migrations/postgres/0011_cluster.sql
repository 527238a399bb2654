-- Several jean2 serve instances on one database (docs/deploy.md); the same tables as
-- store/migrations/0011_cluster.sql, plus the notifications that wake the other instances.
CREATE TABLE turn_leases (
    session_id  TEXT   PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    instance_id TEXT   NOT NULL,
    turn_id     TEXT   NOT NULL DEFAULT '',
    acquired_at BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL
);
CREATE INDEX turn_leases_expiry ON turn_leases (expires_at);
CREATE INDEX turn_leases_instance ON turn_leases (instance_id);

CREATE TABLE cluster_commands (
    id          TEXT   PRIMARY KEY,
    instance_id TEXT   NOT NULL,
    session_id  TEXT   NOT NULL,
    kind        TEXT   NOT NULL,
    body        TEXT   NOT NULL DEFAULT '{}',
    created_at  BIGINT NOT NULL,
    done_at     BIGINT,
    error       TEXT   NOT NULL DEFAULT ''
);
CREATE INDEX cluster_commands_waiting ON cluster_commands (instance_id) WHERE done_at IS NULL;

CREATE TABLE cluster_watchers (
    instance_id TEXT   NOT NULL,
    session_id  TEXT   NOT NULL,
    expires_at  BIGINT NOT NULL,
    PRIMARY KEY (session_id, instance_id)
);

-- Events announce themselves: one notification per inserting statement and session, sent
-- by Postgres when the inserting transaction commits (never before, never for a rollback).
-- The payload is only the session: the listener reads the events from the log by seq.
CREATE FUNCTION jean2_events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE s TEXT;
BEGIN
    FOR s IN SELECT DISTINCT session_id FROM inserted LOOP
        PERFORM pg_notify('jean2_events', s);
    END LOOP;
    RETURN NULL;
END $$;
CREATE TRIGGER events_notify AFTER INSERT ON events
    REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION jean2_events_notify();

-- A command wakes its target instance the same way.
CREATE FUNCTION jean2_commands_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('jean2_commands', NEW.instance_id);
    RETURN NULL;
END $$;
CREATE TRIGGER cluster_commands_notify AFTER INSERT ON cluster_commands
    FOR EACH ROW EXECUTE FUNCTION jean2_commands_notify();

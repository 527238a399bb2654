-- Several jean2 serve instances on one database (docs/deploy.md). A single instance never
-- writes these tables.
--
-- turn_leases: the instance running a turn in a session, until expires_at (Unix ms); the
-- holder renews it while the turn runs, another instance seals the turn once it expired.
CREATE TABLE turn_leases (
    session_id  TEXT    PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    instance_id TEXT    NOT NULL,
    turn_id     TEXT    NOT NULL DEFAULT '',
    acquired_at INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX turn_leases_expiry ON turn_leases (expires_at);
CREATE INDEX turn_leases_instance ON turn_leases (instance_id);

-- cluster_commands: what one instance asks the instance running a session's turn to do (stop
-- it, answer one of its asks); the target marks it done, with an error when it failed.
CREATE TABLE cluster_commands (
    id          TEXT    PRIMARY KEY,
    instance_id TEXT    NOT NULL,
    session_id  TEXT    NOT NULL,
    kind        TEXT    NOT NULL,
    body        TEXT    NOT NULL DEFAULT '{}',
    created_at  INTEGER NOT NULL,
    done_at     INTEGER,
    error       TEXT    NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX cluster_commands_waiting ON cluster_commands (instance_id) WHERE done_at IS NULL;

-- cluster_watchers: the sessions each instance has a client attached to, until expires_at;
-- an ask goes to the unattended policy only when no instance has one.
CREATE TABLE cluster_watchers (
    instance_id TEXT    NOT NULL,
    session_id  TEXT    NOT NULL,
    expires_at  INTEGER NOT NULL,
    PRIMARY KEY (session_id, instance_id)
) STRICT;

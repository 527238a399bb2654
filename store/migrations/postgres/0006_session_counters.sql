-- The session's open turn and the last number of its event log move into the sessions row;
-- as SQLite's migrations/0006_session_counters.sql.

ALTER TABLE sessions ADD COLUMN open_turn_id              text   NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN open_turn_user_message_id text   NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN open_turn_started_at      bigint NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN last_event_seq            bigint NOT NULL DEFAULT 0;

UPDATE sessions SET last_event_seq = e.last_seq
FROM event_seqs e WHERE e.session_id = sessions.id;
DELETE FROM event_seqs WHERE session_id IN (SELECT id FROM sessions);

UPDATE sessions SET
    open_turn_id              = e.payload::json->>'turnId',
    open_turn_user_message_id = COALESCE(e.payload::json->>'userMessageId', ''),
    open_turn_started_at      = e.created_at
FROM (SELECT session_id, MAX(seq) AS seq FROM events WHERE type = 'turn.started' GROUP BY session_id) last
JOIN events e ON e.session_id = last.session_id AND e.seq = last.seq
WHERE sessions.id = last.session_id
  AND json_typeof(e.payload::json->'turnId') = 'string'
  AND NOT EXISTS (SELECT 1 FROM events f
                  WHERE f.session_id = last.session_id AND f.seq > last.seq AND f.type = 'turn.finished');

DROP INDEX sessions_by_workspace;
CREATE INDEX sessions_by_workspace ON sessions (workspace_id);

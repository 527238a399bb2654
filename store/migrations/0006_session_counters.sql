-- What every commit of an agent's turn touched beside its own rows moves into the sessions
-- row, which those commits write anyway (a new message moves updated_at): each page a
-- commit changes is one more page written to the log, and that write was most of a
-- commit's cost.
--
-- 1. The session's open turn: a turn that started and has not finished. The harness sets
--    it in the transaction that stores the user's message and turn.started, and clears it
--    in the one that stores turn.finished, so after a crash these columns alone name the
--    turns to seal, however long the event log has grown.
-- 2. The last number of the session's event log (was a row of event_seqs; event_seqs
--    stays for logs without a session, such as the server's own, "").
-- 3. sessions_by_workspace indexes the workspace alone: with updated_at in it, every new
--    message moved an index entry. A workspace's sessions are sorted when listed.

ALTER TABLE sessions ADD COLUMN open_turn_id              TEXT    NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN open_turn_user_message_id TEXT    NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN open_turn_started_at      INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN last_event_seq            INTEGER NOT NULL DEFAULT 0;

UPDATE sessions SET last_event_seq = e.last_seq
FROM event_seqs e WHERE e.session_id = sessions.id;
DELETE FROM event_seqs WHERE session_id IN (SELECT id FROM sessions);

-- Turns a server older than these columns left open: the last turn.started of a session
-- with no turn.finished after it.
UPDATE sessions SET
    open_turn_id              = json_extract(e.payload, '$.turnId'),
    open_turn_user_message_id = COALESCE(json_extract(e.payload, '$.userMessageId'), ''),
    open_turn_started_at      = e.created_at
FROM (SELECT session_id, MAX(seq) AS seq FROM events WHERE type = 'turn.started' GROUP BY session_id) last
JOIN events e ON e.session_id = last.session_id AND e.seq = last.seq
WHERE sessions.id = last.session_id
  AND json_type(e.payload, '$.turnId') = 'text'
  AND NOT EXISTS (SELECT 1 FROM events f
                  WHERE f.session_id = last.session_id AND f.seq > last.seq AND f.type = 'turn.finished');

DROP INDEX sessions_by_workspace;
CREATE INDEX sessions_by_workspace ON sessions (workspace_id);

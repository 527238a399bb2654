-- A session's system messages by seq (docs/store.md, "Live messages"): a turn reads its
-- session's messages from the last compaction on, found through them, so that what it
-- reads does not grow with the session's history. System messages are few, so the index
-- is small.
CREATE INDEX messages_system ON messages (session_id, role, seq) WHERE role = 'system';

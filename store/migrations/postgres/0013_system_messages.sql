-- The same step as store/migrations/0013_system_messages.sql: a session's system messages
-- by seq, through which a turn finds the last compaction (docs/store.md, "Live messages").
CREATE INDEX messages_system ON messages (session_id, role, seq) WHERE role = 'system';

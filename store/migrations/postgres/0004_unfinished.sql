-- Partial indexes for crash recovery; as SQLite's migrations/0004_unfinished.sql.
CREATE INDEX messages_unfinished ON messages (session_id) WHERE status = 'streaming';
CREATE INDEX parts_unfinished ON parts (message_id) WHERE status IN ('streaming', 'pending', 'running');

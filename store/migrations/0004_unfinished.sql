-- Crash recovery looks for what a stopped server left unfinished: messages still streaming
-- and parts still streaming, pending or running. Partial indexes hold only those rows, so the
-- search costs nothing however long the history grows.
CREATE INDEX messages_unfinished ON messages (session_id) WHERE status = 'streaming';
CREATE INDEX parts_unfinished ON parts (message_id) WHERE status IN ('streaming', 'pending', 'running');

-- Search across sessions (GET /api/search): the text of user and assistant messages in an
-- FTS5 index, kept by triggers as messages are added, changed and deleted (deleting a
-- session deletes its messages, and the triggers their entries). message_search_rows maps
-- a message to its index row, so an entry is found again without a scan: the index cannot
-- share the messages' rowids, which VACUUM may renumber.

CREATE VIRTUAL TABLE message_search USING fts5(
    content,
    message_id UNINDEXED,
    session_id UNINDEXED,
    tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TABLE message_search_rows (
    message_id TEXT PRIMARY KEY,
    search_rowid INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TRIGGER message_search_insert AFTER INSERT ON messages
WHEN new.role IN ('user', 'assistant') AND new.content <> ''
BEGIN
    INSERT INTO message_search (content, message_id, session_id) VALUES (new.content, new.id, new.session_id);
    INSERT INTO message_search_rows (message_id, search_rowid) VALUES (new.id, last_insert_rowid());
END;

CREATE TRIGGER message_search_update AFTER UPDATE OF content ON messages
WHEN new.content IS NOT old.content
BEGIN
    DELETE FROM message_search WHERE rowid = (SELECT search_rowid FROM message_search_rows WHERE message_id = old.id);
    DELETE FROM message_search_rows WHERE message_id = old.id;
    INSERT INTO message_search (content, message_id, session_id)
        SELECT new.content, new.id, new.session_id WHERE new.role IN ('user', 'assistant') AND new.content <> '';
    INSERT INTO message_search_rows (message_id, search_rowid)
        SELECT new.id, last_insert_rowid() WHERE new.role IN ('user', 'assistant') AND new.content <> '';
END;

CREATE TRIGGER message_search_delete AFTER DELETE ON messages
BEGIN
    DELETE FROM message_search WHERE rowid = (SELECT search_rowid FROM message_search_rows WHERE message_id = old.id);
    DELETE FROM message_search_rows WHERE message_id = old.id;
END;

INSERT INTO message_search (content, message_id, session_id)
    SELECT content, id, session_id FROM messages WHERE role IN ('user', 'assistant') AND content <> '' ORDER BY rowid;
INSERT INTO message_search_rows (message_id, search_rowid)
    SELECT message_id, rowid FROM message_search;

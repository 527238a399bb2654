-- Compactions as parts of kind 'compaction'; as SQLite's migrations/0007_compaction_parts.sql
-- (which rebuilds the table; Postgres changes the constraint in place).
ALTER TABLE parts DROP CONSTRAINT parts_kind_check;
ALTER TABLE parts ADD CONSTRAINT parts_kind_check
    CHECK (kind IN ('text', 'tool_call', 'tool_result', 'image', 'compaction'));

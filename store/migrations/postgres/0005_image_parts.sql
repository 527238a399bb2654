-- Images as parts of kind 'image' (SQLite's migrations/0005_image_parts.sql rebuilds the
-- table; Postgres changes the constraint in place). data is bytea: Postgres keeps large
-- values out of line (TOAST), so a query that does not ask for it does not read it.
ALTER TABLE parts ADD COLUMN media_type text NOT NULL DEFAULT '';
ALTER TABLE parts ADD COLUMN data bytea;
ALTER TABLE parts DROP CONSTRAINT parts_kind_check;
ALTER TABLE parts ADD CONSTRAINT parts_kind_check CHECK (kind IN ('text', 'tool_call', 'tool_result', 'image'));
ALTER TABLE parts ADD CONSTRAINT parts_image_check CHECK (kind <> 'image' OR (media_type <> '' AND data IS NOT NULL));

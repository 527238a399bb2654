-- The content hash of the tool version that ran a tool call; as SQLite's
-- migrations/0018_part_tool_hash.sql.
ALTER TABLE parts ADD COLUMN tool_hash text COLLATE "C" NOT NULL DEFAULT '';

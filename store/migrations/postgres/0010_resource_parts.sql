-- Resources of imported MCP servers attached to a message, as parts of kind 'resource'; as
-- SQLite's migrations/0010_resource_parts.sql (which rebuilds the table; Postgres changes
-- the constraints in place). args holds the resource's {"server","workspaceId","uri"}.
ALTER TABLE parts DROP CONSTRAINT parts_kind_check;
ALTER TABLE parts ADD CONSTRAINT parts_kind_check
    CHECK (kind IN ('text', 'tool_call', 'tool_result', 'image', 'compaction', 'resource'));
ALTER TABLE parts ADD CONSTRAINT parts_resource_check
    CHECK (kind <> 'resource' OR (args IS NOT NULL AND args::jsonb IS NOT NULL));

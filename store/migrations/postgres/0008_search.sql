-- Search across sessions (GET /api/search), as SQLite's migrations/0008_search.sql does with
-- FTS5: words of user and assistant messages, case and accents ignored, prefixes matched.
-- Here a GIN index on a text search vector each message keeps in a generated column (so
-- nothing has to keep it in step, and neither the index's recheck nor the ranking computes
-- it again). Accents go through the unaccent extension (shipped with PostgreSQL; trusted, so
-- the database's owner may create it); unaccent() itself is not IMMUTABLE (its dictionary
-- could change), so the column uses it through jean2_unaccent, which names the dictionary.

CREATE EXTENSION IF NOT EXISTS unaccent;

CREATE FUNCTION jean2_unaccent(text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
    RETURN unaccent('unaccent'::regdictionary, $1);

ALTER TABLE messages ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (
    CASE WHEN role IN ('user', 'assistant') AND content <> ''
         THEN to_tsvector('simple'::regconfig, jean2_unaccent(content)) END) STORED;

CREATE INDEX messages_search ON messages USING gin (search_vector);

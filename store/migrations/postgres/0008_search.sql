-- Search across sessions (GET /api/search), as SQLite's migrations/0008_search.sql does with
-- FTS5: words of user and assistant messages, case and accents ignored, prefixes matched.
-- Here a GIN index on the messages' own text search vector, so nothing has to be kept in
-- step by triggers. Accents go through the unaccent extension (shipped with PostgreSQL;
-- trusted, so the database's owner may create it); unaccent() itself is not IMMUTABLE (its
-- dictionary could change), so an index uses it through jean2_unaccent, which names the
-- dictionary.

CREATE EXTENSION IF NOT EXISTS unaccent;

CREATE FUNCTION jean2_unaccent(text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
    RETURN unaccent('unaccent'::regdictionary, $1);

CREATE FUNCTION jean2_search_vector(text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
    RETURN to_tsvector('simple'::regconfig, jean2_unaccent($1));

CREATE INDEX messages_search ON messages USING gin (jean2_search_vector(content))
    WHERE role IN ('user', 'assistant') AND content <> '';

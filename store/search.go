package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
)

// SearchHit is a session that matched a search: its newest matching messages' snippets.
type SearchHit struct {
	Session Session `json:"session"`
	// Matches are up to three snippets of matching messages, newest first; the matched words
	// are between \x02 and \x03 (clients mark them). Empty when only the title matched.
	Matches []SearchMatch `json:"matches"`
}

// SearchMatch is one matching message.
type SearchMatch struct {
	MessageID string    `json:"messageId"`
	Role      Role      `json:"role"`
	Snippet   string    `json:"snippet"`
	CreatedAt time.Time `json:"createdAt"`
}

// MaxSearchHits bounds the sessions a search returns.
const MaxSearchHits = 50

// searchWords are the words of what a person typed that a search looks for: runs of
// letters, digits and _, at most 16, so punctuation and query operators in the input are
// plain text.
func searchWords(q string) []string {
	words := strings.FieldsFunc(q, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) && r != '_' })
	return words[:min(len(words), 16)]
}

// ftsQuery turns what a person typed into an FTS5 query: each word a quoted prefix term,
// all required.
func ftsQuery(q string) string {
	var terms []string
	for _, w := range searchWords(q) {
		terms = append(terms, `"`+w+`"*`)
	}
	return strings.Join(terms, " ")
}

// tsQuery is ftsQuery for Postgres's to_tsquery: each word a quoted prefix, all required.
// The words hold no quote or operator (searchWords).
func tsQuery(q string) string {
	var terms []string
	for _, w := range searchWords(q) {
		terms = append(terms, "'"+w+"':*")
	}
	return strings.Join(terms, " & ")
}

// Search finds the sessions whose messages (user and assistant text) or title hold every
// word of q (as a word prefix, case and accents ignored), newest activity first, at most
// limit (MaxSearchHits when 0 or more). workspaceID "" searches every workspace.
func (db *DB) Search(ctx context.Context, q, workspaceID string, limit int) ([]SearchHit, error) {
	fq := ftsQuery(q)
	if fq == "" {
		return []SearchHit{}, nil
	}
	if limit <= 0 || limit > MaxSearchHits {
		limit = MaxSearchHits
	}
	found, err := db.searchMessages(ctx, q, fq)
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", q, err)
	}
	titled, err := db.searchTitles(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("search %q in titles: %w", q, err)
	}
	// The sessions of the hits, read at once (on Postgres each read is a round trip).
	ids := make([]string, 0, len(found)+len(titled))
	for _, m := range found {
		ids = append(ids, m.ses)
	}
	sessions, err := db.sessionsByID(ctx, append(ids, titled...))
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", q, err)
	}
	out := groupHits(found, titled, sessions, workspaceID)
	// Newest activity first.
	slices.SortStableFunc(out, func(a, b SearchHit) int { return b.Session.UpdatedAt.Compare(a.Session.UpdatedAt) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// searchTitles returns up to 200 sessions whose title holds every word of q, case ignored;
// the words are literal (LIKE's wildcards typed are escaped).
func (db *DB) searchTitles(ctx context.Context, q string) ([]string, error) {
	like := `SELECT id FROM sessions WHERE 1=1`
	op := "LIKE" // SQLite's LIKE ignores case
	if db.dialect == dialectPostgres {
		op = "ILIKE"
	}
	var args []any
	for _, w := range strings.Fields(q) {
		like += ` AND title ` + op + ` ? ESCAPE '\'`
		args = append(args, "%"+strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(w)+"%")
	}
	rows, err := db.read.QueryContext(ctx, like+` LIMIT 200`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var titled []string
	for rows.Next() {
		var id string
		if rows.Scan(&id) == nil {
			titled = append(titled, id)
		}
	}
	return titled, nil
}

// groupHits gathers the matching messages by session, at most three each in the order
// found, then the sessions that only their title matched; sessions outside workspaceID
// (when given) or no longer there are left out.
func groupHits(found []searchMatch, titled []string, sessions map[string]Session, workspaceID string) []SearchHit {
	bySession := map[string]*SearchHit{}
	var order []string
	add := func(sesID string) *SearchHit {
		if h, ok := bySession[sesID]; ok {
			return h
		}
		s, ok := sessions[sesID]
		if !ok || (workspaceID != "" && s.WorkspaceID != workspaceID) {
			bySession[sesID] = nil
			return nil
		}
		h := &SearchHit{Session: s, Matches: []SearchMatch{}}
		bySession[sesID] = h
		order = append(order, sesID)
		return h
	}
	for _, m := range found {
		h := add(m.ses)
		if h == nil || len(h.Matches) >= 3 {
			continue
		}
		h.Matches = append(h.Matches, SearchMatch{MessageID: m.msg, Role: m.role, Snippet: m.snip, CreatedAt: toTime(m.created)})
	}
	for _, id := range titled {
		add(id)
	}
	out := make([]SearchHit, 0, len(order))
	for _, id := range order {
		out = append(out, *bySession[id])
	}
	return out
}

// searchMatch is a message that matched a search.
type searchMatch struct {
	msg, ses, snip string
	role           Role
	created        int64
}

// searchMessages finds up to 500 messages holding every word of q as a word prefix, best
// first: FTS5 on SQLite (fq is its query), a text search vector on Postgres.
func (db *DB) searchMessages(ctx context.Context, q, fq string) ([]searchMatch, error) {
	query, args := `
		SELECT s.message_id, s.session_id, snippet(message_search, 0, char(2), char(3), '…', 12), m.role, m.created_at
		FROM message_search s JOIN messages m ON m.id = s.message_id
		WHERE message_search MATCH ? ORDER BY s.rank LIMIT 500`, []any{fq}
	if db.dialect == dialectPostgres {
		// The same words as prefixes of the unaccented, lower-cased text of user and
		// assistant messages (search_vector, migration 0008, indexed). The snippet marks
		// the words in the text as written.
		tq := tsQuery(q)
		query, args = `
		WITH q AS (SELECT to_tsquery('simple', jean2_unaccent(?)) AS q)
		SELECT m.id, m.session_id,
		       ts_headline('simple', m.content, to_tsquery('simple', ?), 'StartSel=' || chr(2) || ', StopSel=' || chr(3) || ', MaxWords=12, MinWords=4'),
		       m.role, m.created_at
		FROM messages m, q
		WHERE m.search_vector @@ q.q
		ORDER BY ts_rank(m.search_vector, q.q) DESC, m.created_at DESC LIMIT 500`,
			[]any{tq, tq}
	}
	rows, err := db.read.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var found []searchMatch
	for rows.Next() {
		var m searchMatch
		if err := rows.Scan(&m.msg, &m.ses, &m.snip, &m.role, &m.created); err != nil {
			return nil, err
		}
		found = append(found, m)
	}
	return found, rows.Err()
}

// sessionsByID reads the sessions with the given ids (repeats allowed); ids that name no
// session are left out.
func (db *DB) sessionsByID(ctx context.Context, ids []string) (map[string]Session, error) {
	out := map[string]Session{}
	var todo []string
	seen := map[string]bool{}
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			todo = append(todo, id)
		}
	}
	for len(todo) > 0 {
		chunk := todo[:min(len(todo), 500)]
		todo = todo[len(chunk):]
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		rows, err := db.read.QueryContext(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id IN (?`+
			strings.Repeat(", ?", len(chunk)-1)+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("read sessions: %w", err)
		}
		for rows.Next() {
			s, err := scanSession(rows)
			if err != nil {
				rows.Close()
				return nil, fmt.Errorf("read sessions: %w", err)
			}
			out[s.ID] = s
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("read sessions: %w", err)
		}
	}
	return out, nil
}

package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/tool"
)

// Limits of session_search's answers.
const (
	sessionSearchHits   = 10      // sessions per search
	sessionMessageChars = 8 << 10 // bytes of one message read whole
	sessionSearchQuery  = 500     // bytes of a query, as the API allows
)

// SessionSearcher finds sessions by the words of their messages (*store.DB).
type SessionSearcher interface {
	Search(ctx context.Context, q, workspaceID string, limit int) ([]store.SearchHit, error)
	Message(ctx context.Context, id string) (store.Message, error)
	Session(ctx context.Context, id string) (store.Session, error)
}

var _ SessionSearcher = (*store.DB)(nil)

type sessionSearchIn struct {
	Query     string `json:"query"`
	MessageID string `json:"messageId"`
}

type foundSession struct {
	SessionID string         `json:"sessionId"`
	Title     string         `json:"title"`
	UpdatedAt time.Time      `json:"updatedAt"`
	Current   bool           `json:"current,omitempty"`
	Matches   []foundMessage `json:"matches"`
}

type foundMessage struct {
	MessageID string     `json:"messageId"`
	Role      store.Role `json:"role"`
	Snippet   string     `json:"snippet"`
	CreatedAt time.Time  `json:"createdAt"`
}

// SessionSearch is the session_search tool: the agent searches the messages of the past
// sessions of the call's workspace — the search people have (GET /api/search), held to
// the workspace like the rest of the agent's reach — and reads one message whole.
func SessionSearch(db SessionSearcher) tool.Tool {
	t := true
	return tool.Func{Def: tool.Definition{
		Name: "session_search",
		Description: "Search the past sessions of this workspace: what was asked, decided and done before. " +
			"query finds the sessions whose messages hold every word (newest first), with snippets of the matching messages (matched words between **). " +
			"messageId reads one message of those results whole.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"query":{"type":"string","description":"Words to look for"},` +
			`"messageId":{"type":"string","description":"A message id from a search's results, to read it whole"}},` +
			`"additionalProperties":false}`),
		Timeout:     30000,
		Annotations: &tool.Annotations{ReadOnlyHint: &t},
	}, Run: func(ctx context.Context, c *tool.Context, args json.RawMessage) tool.Result {
		var in sessionSearchIn
		if err := json.Unmarshal(args, &in); err != nil {
			return tool.Errorf("invalid arguments for session_search: %v", err)
		}
		if c.WorkspaceID == "" {
			return tool.Errorf("session_search: the call has no workspace whose sessions to search")
		}
		switch {
		case in.MessageID != "":
			return readPastMessage(ctx, db, c, in.MessageID)
		case strings.TrimSpace(in.Query) == "":
			return tool.Errorf("session_search: give query (words to look for) or messageId")
		case len(in.Query) > sessionSearchQuery:
			return tool.Errorf("session_search: query is %d bytes; search for at most %d", len(in.Query), sessionSearchQuery)
		}
		return searchSessions(ctx, db, c, in.Query)
	}}
}

func searchSessions(ctx context.Context, db SessionSearcher, c *tool.Context, q string) tool.Result {
	hits, err := db.Search(ctx, q, c.WorkspaceID, sessionSearchHits)
	if err != nil {
		return tool.Errorf("session_search: %v", err)
	}
	mark := strings.NewReplacer("\x02", "**", "\x03", "**")
	out := make([]foundSession, 0, len(hits))
	for _, h := range hits {
		if h.Session.WorkspaceID != c.WorkspaceID { // the store filters; this holds it here too
			continue
		}
		fs := foundSession{SessionID: h.Session.ID, Title: h.Session.Title, UpdatedAt: h.Session.UpdatedAt,
			Current: h.Session.ID == c.SessionID, Matches: []foundMessage{}}
		for _, m := range h.Matches {
			fs.Matches = append(fs.Matches, foundMessage{MessageID: m.MessageID, Role: m.Role, Snippet: mark.Replace(m.Snippet), CreatedAt: m.CreatedAt})
		}
		out = append(out, fs)
	}
	return tool.Success(map[string]any{"query": q, "sessions": out})
}

// readPastMessage is one message's text, when its session is of the call's workspace.
func readPastMessage(ctx context.Context, db SessionSearcher, c *tool.Context, id string) tool.Result {
	m, err := db.Message(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return tool.Errorf("session_search: there is no message %s", id)
	}
	if err != nil {
		return tool.Errorf("session_search: %v", err)
	}
	ses, err := db.Session(ctx, m.SessionID)
	if err != nil {
		return tool.Errorf("session_search: %v", err)
	}
	if ses.WorkspaceID != c.WorkspaceID {
		// The same answer as a message that is not there: another workspace's sessions are
		// not this one's to know of.
		return tool.Errorf("session_search: there is no message %s", id)
	}
	var b strings.Builder
	b.WriteString(m.Content)
	for _, p := range m.Parts {
		if p.Kind == store.PartText && p.Text != "" {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(p.Text)
		}
	}
	text := b.String()
	if len(text) > sessionMessageChars {
		text = strings.ToValidUTF8(text[:sessionMessageChars], "") + fmt.Sprintf("\n[cut: the message is %d bytes]", len(b.String()))
	}
	return tool.Success(map[string]any{"sessionId": ses.ID, "title": ses.Title, "messageId": m.ID,
		"role": m.Role, "createdAt": m.CreatedAt, "text": text})
}

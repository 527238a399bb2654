package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/jean2/jean2/store"
)

// compactionLine is how the chat shows a compaction part.
func compactionLine(p store.Part) string {
	var ci store.CompactionInfo
	_ = json.Unmarshal([]byte(p.Args), &ci)
	how := ""
	if ci.Manual {
		how = " (asked for)"
	}
	line := fmt.Sprintf("Context compacted: %d messages summarized%s", ci.Messages, how)
	if ci.TokensBefore > 0 {
		line += fmt.Sprintf(", about %d → %d tokens", ci.TokensBefore, ci.TokensAfter)
	}
	return line
}

// compact asks the server to summarize the session's older messages now (/compact). The
// compaction itself is shown when its message.created arrives.
func (u *chatUI) compact() {
	u.println(u.st.dim("Compacting the conversation…"))
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		ctx, cancel := context.WithTimeout(u.ctx, 10*time.Minute)
		defer cancel()
		err := u.api.call(ctx, http.MethodPost, "/api/sessions/"+url.PathEscape(u.ses.ID)+"/compact", nil, nil)
		if err != nil && u.ctx.Err() == nil {
			fmt.Fprintf(u.out, "%s\n", u.st.red("jean2 chat: compact: "+err.Error()))
		}
	}()
}

// rename gives the session a title (/title NAME).
func (u *chatUI) rename(ctx context.Context, title string) {
	title = strings.TrimSpace(title)
	if title == "" {
		u.println(u.st.dim("(give the new title: /title Fix the login bug)"))
		return
	}
	if err := u.api.call(ctx, http.MethodPatch, "/api/sessions/"+url.PathEscape(u.ses.ID), map[string]any{"title": title}, nil); err != nil {
		u.println(u.st.red("jean2 chat: rename: " + err.Error()))
		return
	}
	u.ses.Title = title
	u.println(u.st.dim("Session renamed: " + cleanLine(title)))
}

// search lists the sessions whose messages or titles hold the words (/search WORDS).
func (u *chatUI) search(ctx context.Context, q string) {
	q = strings.TrimSpace(q)
	if q == "" {
		u.println(u.st.dim("(give the words to look for: /search login bug)"))
		return
	}
	var res struct {
		Sessions []store.SearchHit `json:"sessions"`
	}
	if err := u.api.call(ctx, http.MethodGet, "/api/search?q="+url.QueryEscape(q), nil, &res); err != nil {
		u.println(u.st.red("jean2 chat: search: " + err.Error()))
		return
	}
	if len(res.Sessions) == 0 {
		u.println(u.st.dim("No session holds " + cleanLine(q) + "."))
		return
	}
	for _, h := range res.Sessions {
		title := h.Session.Title
		if title == "" {
			title = "Untitled session"
		}
		u.println(u.st.bold(cleanLine(title)) + u.st.dim("  "+h.Session.UpdatedAt.Local().Format("2006-01-02 15:04")+"  jean2 chat --session "+h.Session.ID))
		for _, m := range h.Matches {
			// The matched words are between \x02 and \x03: cleaned piece by piece (the marks
			// are control characters), then bold.
			var b strings.Builder
			for i, piece := range strings.FieldsFunc(m.Snippet, func(r rune) bool { return r == 2 }) {
				word, rest, found := strings.Cut(piece, "\x03")
				if !found || (i == 0 && !strings.HasPrefix(m.Snippet, "\x02")) {
					b.WriteString(cleanLine(strings.ReplaceAll(piece, "\x03", "")))
					continue
				}
				b.WriteString(u.st.bold(cleanLine(word)))
				b.WriteString(cleanLine(rest))
			}
			u.println("    " + string(m.Role) + ": " + b.String())
		}
	}
}

// tokens prints the session's token use by model and its cost when the server knows the
// prices (/tokens).
func (u *chatUI) tokens(ctx context.Context) {
	var v struct {
		TokensIn  int64              `json:"tokensIn"`
		TokensOut int64              `json:"tokensOut"`
		Usage     []store.ModelUsage `json:"usage"`
		Cost      *float64           `json:"cost"`
	}
	if err := u.api.call(ctx, http.MethodGet, "/api/sessions/"+url.PathEscape(u.ses.ID), nil, &v); err != nil {
		u.println(u.st.red("jean2 chat: tokens: " + err.Error()))
		return
	}
	line := fmt.Sprintf("This session: %d in / %d out tokens", v.TokensIn, v.TokensOut)
	if v.Cost != nil {
		line += fmt.Sprintf(", cost %.4f", *v.Cost)
	} else if len(v.Usage) > 0 {
		line += " (no price set for every model: PATCH /api/settings prices, or Settings in the web client)"
	}
	u.println(line)
	for _, m := range v.Usage {
		name := cleanLine(m.Model)
		if m.Provider != "" {
			name = cleanLine(m.Provider) + "/" + name
		}
		u.println(u.st.dim(fmt.Sprintf("  %s: %d in / %d out", name, m.TokensIn, m.TokensOut)))
	}
}

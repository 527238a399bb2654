package chat

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jean2/jean2/internal/termtext"
	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/server"
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
		err := u.api.Call(ctx, http.MethodPost, "/api/sessions/"+url.PathEscape(u.ses.ID)+"/compact", nil, nil)
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
	if err := u.api.Call(ctx, http.MethodPatch, "/api/sessions/"+url.PathEscape(u.ses.ID), map[string]any{"title": title}, nil); err != nil {
		u.println(u.st.red("jean2 chat: rename: " + err.Error()))
		return
	}
	u.ses.Title = title
	u.println(u.st.dim("Session renamed: " + termtext.Line(title)))
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
	if err := u.api.Call(ctx, http.MethodGet, "/api/search?q="+url.QueryEscape(q), nil, &res); err != nil {
		u.println(u.st.red("jean2 chat: search: " + err.Error()))
		return
	}
	if len(res.Sessions) == 0 {
		u.println(u.st.dim("No session holds " + termtext.Line(q) + "."))
		return
	}
	for _, h := range res.Sessions {
		title := h.Session.Title
		if title == "" {
			title = "Untitled session"
		}
		u.println(u.st.bold(termtext.Line(title)) + u.st.dim("  "+h.Session.UpdatedAt.Local().Format("2006-01-02 15:04")+"  jean2 chat --session "+h.Session.ID))
		for _, m := range h.Matches {
			// The matched words are between \x02 and \x03: cleaned piece by piece (the marks
			// are control characters), then bold.
			var b strings.Builder
			for i, piece := range strings.FieldsFunc(m.Snippet, func(r rune) bool { return r == 2 }) {
				word, rest, found := strings.Cut(piece, "\x03")
				if !found || (i == 0 && !strings.HasPrefix(m.Snippet, "\x02")) {
					b.WriteString(termtext.Line(strings.ReplaceAll(piece, "\x03", "")))
					continue
				}
				b.WriteString(u.st.bold(termtext.Line(word)))
				b.WriteString(termtext.Line(rest))
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
	if err := u.api.Call(ctx, http.MethodGet, "/api/sessions/"+url.PathEscape(u.ses.ID), nil, &v); err != nil {
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
		name := termtext.Line(m.Model)
		if m.Provider != "" {
			name = termtext.Line(m.Provider) + "/" + name
		}
		u.println(u.st.dim(fmt.Sprintf("  %s: %d in / %d out", name, m.TokensIn, m.TokensOut)))
	}
}

// providerModels is the answer of GET /api/providers/{name}/models.
type providerModels struct {
	Models []provider.ModelInfo `json:"models"`
}

// setChatModel makes the session use model (of providerName, "" keeping the session's
// provider). A model the provider's own list does not hold is refused, naming some that it
// does; when the list cannot be read, the model is taken as given.
func setChatModel(ctx context.Context, api *Client, ses session, providerName, model string) (session, error) {
	body := map[string]any{}
	prov := ses.Provider
	if providerName != "" {
		body["provider"], prov = providerName, providerName
	}
	if model != "" {
		body["model"] = model
		var list providerModels
		name := prov
		if name == "" {
			name = "default"
		}
		if err := api.Call(ctx, http.MethodGet, "/api/providers/"+url.PathEscape(prov)+"/models", nil, &list); err == nil && prov != "" && len(list.Models) > 0 {
			var ids []string
			found := false
			for _, m := range list.Models {
				found = found || m.ID == model
				ids = append(ids, m.ID)
			}
			if !found {
				if len(ids) > 12 {
					ids = append(ids[:12], "…")
				}
				return ses, fmt.Errorf("provider %s does not list the model %s; it lists %s", name, model, strings.Join(ids, ", "))
			}
		}
	}
	var out session
	if err := api.Call(ctx, http.MethodPatch, "/api/sessions/"+url.PathEscape(ses.ID), body, &out); err != nil {
		return ses, err
	}
	return out, nil
}

// model shows or changes the session's model (/model, /model M, /model P M).
func (u *chatUI) model(ctx context.Context, args string) {
	f := strings.Fields(args)
	switch len(f) {
	case 0:
		prov := u.ses.Provider
		shown := prov
		if shown == "" {
			shown = "the default provider"
		}
		model := u.ses.Model
		if model == "" {
			model = "its default model"
		}
		u.println(fmt.Sprintf("This session uses %s of %s.", termtext.Line(model), termtext.Line(shown)))
		var list providerModels
		path := "/api/providers/" + url.PathEscape(prov) + "/models"
		if prov == "" {
			var ps struct {
				Default string `json:"default"`
			}
			if err := u.api.Call(ctx, http.MethodGet, "/api/providers", nil, &ps); err != nil || ps.Default == "" {
				u.println(u.st.dim("(no provider is configured: set OPENAI_API_KEY and OPENAI_MODEL, or add one in the web client's Settings)"))
				return
			}
			path = "/api/providers/" + url.PathEscape(ps.Default) + "/models"
		}
		if err := u.api.Call(ctx, http.MethodGet, path, nil, &list); err != nil {
			u.println(u.st.dim("(the provider's model list could not be read: " + err.Error() + ")"))
			return
		}
		var ids []string
		for _, m := range list.Models {
			ids = append(ids, termtext.Line(m.ID))
		}
		u.println(u.st.dim("Its models: " + strings.Join(ids, ", ")))
		u.println(u.st.dim("(/model NAME switches; /model PROVIDER NAME switches provider too)"))
	case 1, 2:
		prov, model := "", f[0]
		if len(f) == 2 {
			prov, model = f[0], f[1]
		}
		ses, err := setChatModel(ctx, u.api, u.ses, prov, model)
		if err != nil {
			u.println(u.st.red("jean2 chat: model: " + err.Error()))
			return
		}
		u.ses = ses
		u.modelName = u.modelLabel(ctx)
		u.println(u.st.dim("This session now uses " + termtext.Line(model) + "."))
	default:
		u.println(u.st.dim("(/model, /model NAME or /model PROVIDER NAME)"))
	}
}

// turnCost is the cost of a turn's tokens at the model's price in the server's settings,
// "" when the settings give none. The prices are read once, at the first turn that used
// tokens.
func (u *chatUI) turnCost(model string, in, out int64) string {
	if model == "" || u.api == nil || u.ctx == nil {
		return ""
	}
	if u.prices == nil {
		u.prices = map[string]server.Price{}
		ctx, cancel := context.WithTimeout(u.ctx, 3*time.Second)
		var st struct {
			Prices map[string]server.Price `json:"prices"`
		}
		if u.api.Call(ctx, http.MethodGet, "/api/settings", nil, &st) == nil && st.Prices != nil {
			u.prices = st.Prices
		}
		cancel()
	}
	p, ok := u.prices[model]
	if !ok {
		return ""
	}
	return fmt.Sprintf("$%.4f", (float64(in)*p.Input+float64(out)*p.Output)/1e6)
}

// sessions lists the workspace's sessions, newest first: title, date, the start of the
// last message, and how to open each (/sessions).
func (u *chatUI) sessions(ctx context.Context) {
	type row struct {
		ID        string    `json:"id"`
		Title     string    `json:"title"`
		Preview   string    `json:"preview"`
		UpdatedAt time.Time `json:"updatedAt"`
	}
	var res struct {
		Sessions []row `json:"sessions"`
	}
	if err := u.api.Call(ctx, http.MethodGet, "/api/workspaces/"+url.PathEscape(u.ws.ID)+"/sessions", nil, &res); err != nil {
		u.println(u.st.red("jean2 chat: sessions: " + err.Error()))
		return
	}
	slices.SortFunc(res.Sessions, func(a, b row) int { return b.UpdatedAt.Compare(a.UpdatedAt) })
	for i, s := range res.Sessions {
		if i == 20 {
			u.println(u.st.dim(fmt.Sprintf("(%d more)", len(res.Sessions)-20)))
			break
		}
		title := s.Title
		if title == "" {
			title = "Untitled session"
		}
		mark := "  "
		if s.ID == u.ses.ID {
			mark = "▸ "
		}
		line := mark + u.st.bold(clip(termtext.Line(title), 60)) + u.st.dim("  "+s.UpdatedAt.Local().Format("2006-01-02 15:04"))
		if first, _, _ := strings.Cut(s.Preview, "\n"); first != "" {
			line += u.st.dim("  " + clip(termtext.Line(first), 60))
		}
		u.println(line)
		u.println(u.st.dim("    jean2 chat --session " + s.ID))
	}
}

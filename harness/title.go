package harness

import (
	"context"
	"encoding/json"
	"strings"
	"time"
	"unicode"

	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/store"
)

// EventSessionUpdated carries {"session": store.Session} when the harness names a session.
const EventSessionUpdated = "session.updated"

// maxTitle is the longest title kept, in characters.
const maxTitle = 80

// titleTimeout bounds the model call that names a session.
const titleTimeout = time.Minute

const titleSystem = `You name conversations between a person and a coding agent. Answer with a title of at most six words that says what the person wants, in the person's language: no quotes, no final period, nothing else.`

// SetTitles turns the naming of sessions on or off for turns started from now on: after
// the first turn of a session that has no title, the model (model, when not "", else the
// session's own) is asked for one; when it cannot give one, the first line of the person's
// message is the title. A session a person named keeps its name.
func (h *Harness) SetTitles(on bool, model string) {
	h.mu.Lock()
	h.titles, h.titleModel = on, strings.TrimSpace(model)
	h.mu.Unlock()
}

func (h *Harness) titleSettings() (bool, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.titles, h.titleModel
}

// nameSession names the turn's session after its first turn, in the background (Close
// waits for it). Only a turn that ended well asks the model (a stopped or failed one would
// spend a request the person did not expect); the others are named by their first line.
func (t *turn) nameSession(reason string) {
	on, model := t.h.titleSettings()
	if !on || t.session.Title != "" || t.userMsg.Seq != 1 {
		return
	}
	if model == "" {
		model = t.model
	}
	answer := ""
	for _, m := range t.history {
		if m.Role == store.RoleAssistant && m.Finish != finishDropped && strings.TrimSpace(m.Content) != "" {
			answer = m.Content
			break
		}
	}
	h, sessionID, user, prov := t.h, t.sessionID, t.userMsg.Content, t.prov
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		ctx, cancel := context.WithTimeout(h.base, titleTimeout)
		defer cancel()
		title, err := "", error(nil)
		if reason == ReasonDone {
			title, err = askTitle(ctx, prov, model, user, answer)
		}
		if err != nil || title == "" {
			h.log.Info("the model gave no title: the first line of the message names the session", "session", sessionID, "error", err)
			title = firstLineTitle(user)
		}
		if title == "" {
			return
		}
		wctx := context.WithoutCancel(ctx)
		ses, set, err := h.opts.Store.SetTitleIfEmpty(wctx, sessionID, title)
		if err != nil || !set {
			return
		}
		payload, err := json.Marshal(map[string]any{"session": ses})
		if err == nil {
			_, err = h.opts.Events.Publish(wctx, sessionID, store.NewEvent{Type: EventSessionUpdated, Payload: payload})
		}
		if err != nil {
			h.log.Warn("announce the session's title", "session", sessionID, "error", err)
		}
	}()
}

// askTitle asks the model for a title of the exchange.
func askTitle(ctx context.Context, prov provider.Provider, model, user, answer string) (string, error) {
	clip := func(s string, n int) string {
		if len(s) > n {
			return strings.ToValidUTF8(s[:n], "") + "…"
		}
		return s
	}
	text := "The person wrote:\n" + clip(user, 2000)
	if answer != "" {
		text += "\n\nThe agent answered:\n" + clip(answer, 1000)
	}
	s, err := prov.Stream(ctx, provider.Request{Model: model, System: titleSystem, MaxTokens: 30,
		Messages: []provider.Message{{Role: provider.RoleUser, Text: text}}})
	if err != nil {
		return "", err
	}
	res, err := provider.Collect(s)
	if err != nil {
		return "", err
	}
	return cleanTitle(res.Text), nil
}

// cleanTitle keeps the first line of what the model wrote, without a "Title:" label,
// quotes, a final period or control characters, at most maxTitle characters.
func cleanTitle(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	for _, label := range []string{"title:", "Title:", "TITLE:"} {
		s = strings.TrimPrefix(s, label)
	}
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
	s = strings.Trim(strings.TrimSpace(s), "\"'`*#“”‘’")
	s = strings.TrimSuffix(strings.TrimSpace(s), ".")
	if r := []rune(s); len(r) > maxTitle {
		s = string(r[:maxTitle-1]) + "…"
	}
	return strings.TrimSpace(s)
}

// firstLineTitle is the title a session gets when the model gives none.
func firstLineTitle(text string) string {
	for _, line := range strings.Split(text, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return cleanTitle(line)
		}
	}
	return ""
}

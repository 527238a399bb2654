package server

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/store"
)

// agentRoutes adds the routes of the agent's own features: the system prompt, the
// instruction files in effect, compaction (docs/api.md).
func (s *Server) agentRoutes(route func(string, handlerFunc)) {
	route("GET /api/settings/system-prompt", s.getSystemPrompt)
	route("GET /api/workspaces/{id}/instructions", s.getInstructions)
	route("GET /api/skills", s.listSkills)
	route("GET /api/workspaces/{id}/skills", s.listWorkspaceSkills)
	route("GET /api/workspaces/{id}/agents", s.getAgents)
	route("POST /api/sessions/{id}/compact", s.compactSession)
	route("GET /api/sessions/{id}/children", s.listChildren)
	route("GET /api/search", s.search)
	route("GET /api/providers/{name}/models", s.getProviderModels)
	route("POST /api/providers/{name}/test", s.testProvider)
	route("POST /api/providers/probe", s.probeProvider)
}

// search is GET /api/search?q=words[&workspaceId=…]: the sessions whose messages or title
// hold every word, newest first, with snippets of their matching messages.
func (s *Server) search(w http.ResponseWriter, r *http.Request) error {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if q == "" {
		return badRequest("give q: the words to look for, e.g. /api/search?q=login+bug")
	}
	if len(q) > 500 {
		return badRequest("q is %d bytes; search for at most 500", len(q))
	}
	hits, err := s.db.Search(r.Context(), q, r.URL.Query().Get("workspaceId"), 0)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": hits})
	return nil
}

// compactSession is POST /api/sessions/{id}/compact: the session's older messages are
// summarized now (the compaction reaches the session's clients as message.created).
func (s *Server) compactSession(w http.ResponseWriter, r *http.Request) error {
	ses, err := s.session(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	if _, _, err := s.providers.Model(r.Context(), ses.Provider, ses.Model); err != nil {
		return errorf(http.StatusBadRequest, codeNoProvider, "%v", err)
	}
	// The session may not be deleted while it is summarized (see gate).
	defer s.gate.enter(sessionKey(ses.ID))()
	if _, err := s.session(r.Context(), ses.ID); err != nil {
		return err
	}
	info, err := s.harness.Compact(r.Context(), ses.ID)
	switch {
	case errors.Is(err, harness.ErrBusy):
		return busyError(ses.ID, err, "wait for it to end, or stop it, before compacting")
	case errors.Is(err, harness.ErrNothingToCompact):
		return errorf(http.StatusConflict, codeConflict, "%v", err)
	case err != nil:
		return errorf(http.StatusBadGateway, codeUnavailable, "%v", err)
	}
	writeJSON(w, http.StatusOK, info)
	return nil
}

// systemPromptView is GET /api/settings/system-prompt: the default prompt (what an empty
// systemPrompt setting means) and the one in effect.
type systemPromptView struct {
	Default    string `json:"default"`
	Current    string `json:"current"`
	Overridden bool   `json:"overridden"`
}

func (s *Server) getSystemPrompt(w http.ResponseWriter, r *http.Request) error {
	def := s.cfg.System
	if def == "" {
		def = harness.DefaultSystem
	}
	v := systemPromptView{Default: def, Current: def}
	if st := s.settings.get(); st.SystemPrompt != "" {
		v.Current, v.Overridden = st.SystemPrompt, true
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// getInstructions lists the AGENTS.md files that join the system prompt of the
// workspace's sessions: $JEAN2_HOME's, the repository's up to the workspace's own.
func (s *Server) getInstructions(w http.ResponseWriter, r *http.Request) error {
	ws, err := s.db.Workspace(r.Context(), r.PathValue("id"))
	if err != nil {
		return storeErr(err, "workspace "+r.PathValue("id"))
	}
	in := s.harness.Instructions(ws.Path)
	if in.Files == nil {
		in.Files = []harness.InstructionFile{}
	}
	writeJSON(w, http.StatusOK, in)
	return nil
}

// usageView is what a session's view says of its use: a preview of the person's last
// message, the tokens used, and their cost when the settings know every model's price.
type usageView struct {
	Preview   string             `json:"preview,omitempty"`
	TokensIn  int64              `json:"tokensIn"`
	TokensOut int64              `json:"tokensOut"`
	Usage     []store.ModelUsage `json:"usage,omitempty"`
	// Cost is in the prices' currency (USD in the defaults' words); absent when a model
	// that used tokens has no price in the settings.
	Cost *float64 `json:"cost,omitempty"`
}

func (s *Server) usageOf(ctx context.Context, sessionID string) (usageView, error) {
	sum, err := s.db.Summary(ctx, sessionID)
	if err != nil {
		return usageView{}, err
	}
	v := usageView{Preview: sum.Preview, Usage: sum.Usage}
	prices := s.settings.get().Prices
	cost, priced := 0.0, true
	for _, u := range sum.Usage {
		v.TokensIn += u.TokensIn
		v.TokensOut += u.TokensOut
		p, ok := prices[u.Model]
		if !ok {
			priced = false
			continue
		}
		cost += p.cost(u.TokensIn, u.TokensOut)
	}
	if priced && len(sum.Usage) > 0 {
		v.Cost = &cost
	}
	return v, nil
}

// Price is what a model costs per million tokens, in the settings' "prices".
type Price struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
}

func (p Price) cost(in, out int64) float64 {
	return (float64(in)*p.Input + float64(out)*p.Output) / 1e6
}

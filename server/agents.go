package server

import (
	"context"
	"net/http"
	"strings"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/store"
)

// getAgents is GET /api/workspaces/{id}/agents: the agents its sessions may run with,
// read from their files now, and the files that could not be loaded (docs/harness.md).
func (s *Server) getAgents(w http.ResponseWriter, r *http.Request) error {
	ws, err := s.workspace(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.harness.Agents(ws.Path))
	return nil
}

// applyAgent sets the session's agent from a request's "agent", refusing a name no agent
// of the session's workspace has. The default agent is stored as "".
func (s *Server) applyAgent(ctx context.Context, name *string, ses *store.Session) error {
	if name == nil {
		return nil
	}
	n := strings.TrimSpace(*name)
	if n == "" || n == harness.DefaultAgent {
		ses.Agent = ""
		return nil
	}
	ws, err := s.workspace(ctx, ses.WorkspaceID)
	if err != nil {
		return err
	}
	all := s.harness.Agents(ws.Path)
	if _, ok := all.Lookup(n); !ok {
		msg := "no agent is named %q in workspace %s (agents: %s)"
		for _, p := range all.Problems {
			msg += "; " + p.Path + " was not loaded: " + p.Error
		}
		return badRequest(msg, n, ws.ID, strings.Join(all.Names(), ", "))
	}
	ses.Agent = n
	return nil
}

// agentName is the name of the agent a stored session runs with, as the API shows it.
func agentName(ses store.Session) string {
	if ses.Agent == "" {
		return harness.DefaultAgent
	}
	return ses.Agent
}

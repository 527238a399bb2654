package server

import (
	"errors"
	"net/http"

	"github.com/jean2/jean2/ask"
)

func (s *Server) listGrants(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	sessionID, workspaceID, toolName := q.Get("sessionId"), q.Get("workspaceId"), q.Get("tool")
	out := []ask.Grant{}
	for _, g := range s.grants.List() {
		if (sessionID != "" && g.SessionID != sessionID) || (workspaceID != "" && g.WorkspaceID != workspaceID) ||
			(toolName != "" && g.Tool != toolName) {
			continue
		}
		out = append(out, g)
	}
	writeJSON(w, http.StatusOK, map[string]any{"grants": out})
	return nil
}

func (s *Server) deleteGrant(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.grants.Revoke(r.Context(), id); err != nil {
		if errors.Is(err, ask.ErrUnknownGrant) {
			return notFound("no grant has id %s (GET /api/grants lists them)", id)
		}
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

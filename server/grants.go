package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/jean2/jean2/ask"
)

func (s *Server) listGrants(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	sessionID, workspaceID, toolName := q.Get("sessionId"), q.Get("workspaceId"), q.Get("tool")
	out := []ask.Grant{}
	all := s.grants.List()
	if s.node != nil {
		// Other instances' grants are in the database, not in this one's memory.
		stored, err := s.db.LoadGrants(r.Context())
		if err != nil {
			return err
		}
		for _, g := range stored {
			if !slices.ContainsFunc(all, func(h ask.Grant) bool { return h.ID == g.ID }) {
				all = append(all, g)
			}
		}
	}
	for _, g := range all {
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
	err := s.grants.Revoke(r.Context(), id)
	if errors.Is(err, ask.ErrUnknownGrant) && s.node != nil {
		// Given on another instance: gone from the database here, from its memory when it
		// reads grant.revoked.
		err = s.revokeStored(r.Context(), id)
	}
	if err != nil {
		if errors.Is(err, ask.ErrUnknownGrant) {
			return notFound("no grant has id %s (GET /api/grants lists them)", id)
		}
		return err
	}
	if s.node != nil {
		s.publishServer(r.Context(), eventGrantRevoked, map[string]any{"id": id})
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// eventGrantRevoked on the server log tells the other instances of a cluster to forget a
// grant revoked through this one.
const eventGrantRevoked = "grant.revoked"

// eventGrantGiven on the server log tells the other instances of a cluster to take up a
// grant given through this one (it names the grant; the database holds it).
const eventGrantGiven = "grant.given"

// sharedGrants is the grants' store in a cluster: a grant saved is announced on the server
// log once it is in the database, so every instance's feed takes it up (Grants.Adopt).
type sharedGrants struct {
	ask.Store
	given func(ctx context.Context, g ask.Grant)
}

func (sg sharedGrants) SaveGrant(ctx context.Context, g ask.Grant) error {
	if err := sg.Store.SaveGrant(ctx, g); err != nil {
		return err
	}
	sg.given(ctx, g)
	return nil
}

// announceGrant puts grant.given on the server log: its id and tool only (the paths and
// the question stay in the database, for GET /api/grants).
func (s *Server) announceGrant(ctx context.Context, g ask.Grant) {
	s.publishServer(ctx, eventGrantGiven, map[string]any{"id": g.ID, "tool": g.Tool})
}

// revokeStored deletes a grant this instance does not hold from the database.
func (s *Server) revokeStored(ctx context.Context, id string) error {
	stored, err := s.db.LoadGrants(ctx)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(stored, func(g ask.Grant) bool { return g.ID == id }) {
		return fmt.Errorf("revoke grant %q: %w", id, ask.ErrUnknownGrant)
	}
	return s.db.DeleteGrant(ctx, id)
}

package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/jean2/jean2/store"
)

// parentOf is what makes the session a subagent, or nil for a session a person started.
func (s *Server) parentOf(ctx context.Context, sessionID string) (*store.Subagent, error) {
	sub, err := s.db.Subagent(ctx, sessionID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &sub, nil
}

// listChildren is GET /api/sessions/{id}/children: the sessions the session's task calls
// started, oldest first, each with what its parent gave it. A child's own events are in its
// own log (GET /api/sessions/{child}/ws); the parent's log has subagent.started and
// subagent.finished.
func (s *Server) listChildren(w http.ResponseWriter, r *http.Request) error {
	ses, err := s.session(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	subs, err := s.db.Children(r.Context(), ses.ID)
	if err != nil {
		return err
	}
	out := make([]sessionView, 0, len(subs))
	for _, sub := range subs {
		child, err := s.db.Session(r.Context(), sub.SessionID)
		if errors.Is(err, store.ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return err
		}
		v, err := s.viewSession(r.Context(), child)
		if err != nil {
			return err
		}
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": out})
	return nil
}

package server

import (
	"errors"
	"net/http"

	"github.com/jean2/jean2/hub"
)

// maxRefusalReason bounds the reason a client gives for refusing an ask (it lands in the
// event log and in the tool's error).
const maxRefusalReason = 1024

type refusalBody struct {
	Reason string `json:"reason"`
}

// postRefusal refuses a pending ask: POST /api/sessions/{id}/asks/{askId}/refuse
// {"reason"?}. The tool gets an error at once instead of waiting for the ask's timeout.
// With several instances only the instance holding the ask can refuse it (404 elsewhere).
func (s *Server) postRefusal(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if _, err := s.session(r.Context(), id); err != nil {
		return err
	}
	var b refusalBody
	if err := decodeBody(w, r, &b); err != nil {
		return err
	}
	if len(b.Reason) > maxRefusalReason {
		return badRequest("the reason is %d bytes, more than the %d allowed", len(b.Reason), maxRefusalReason)
	}
	askID := r.PathValue("askId")
	err := s.hub.Refuse(r.Context(), id, askID, b.Reason)
	if errors.Is(err, hub.ErrNoSuchAsk) {
		return notFound("ask %s is not pending here: it was answered, timed out or cancelled already (or waits on another instance)", askID)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true})
	return nil
}

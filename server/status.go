package server

import (
	"context"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/hub"
	"github.com/jean2/jean2/store"
)

// EventSessionStatus on the server log says a session's live status whenever it changes
// (a turn starts or ends, a question starts or stops waiting), so a client's session list
// can show which sessions run and which wait for an answer without following each log.
const EventSessionStatus = "session.status"

type sessionStatusPayload struct {
	SessionID string `json:"sessionId"`
	Running   bool   `json:"running"`
	// Waiting is how many questions of the session wait for a person.
	Waiting int `json:"waiting"`
}

// sessionStatus is the hub's Published hook: it turns a session's events into
// session.status on the server log.
func (s *Server) sessionStatus(sessionID string, evs []store.Event) {
	if sessionID == "" || s.hub == nil || s.harness == nil {
		return
	}
	changed := false
	running := s.harness.Running(sessionID)
	for _, ev := range evs {
		switch ev.Type {
		case harness.EventTurnStarted:
			changed, running = true, true
		case harness.EventTurnFinished:
			// The harness frees the session just after this event.
			changed, running = true, false
		case hub.EventAskPending, hub.EventAskResolved:
			changed = true
		}
	}
	if !changed {
		return
	}
	s.publishServer(context.WithoutCancel(s.ctx), EventSessionStatus,
		sessionStatusPayload{SessionID: sessionID, Running: running, Waiting: len(s.hub.Pending(sessionID))})
}

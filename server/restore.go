package server

import (
	"errors"
	"net/http"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/undo"
)

type restoreBody struct {
	MessageID string `json:"messageId"`
	Force     bool   `json:"force"`
	DryRun    bool   `json:"dryRun"`
	Partial   bool   `json:"partial"`
}

func (s *Server) restore(w http.ResponseWriter, r *http.Request) error {
	var b restoreBody
	if err := decodeBody(w, r, &b); err != nil {
		return err
	}
	ses, err := s.session(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	if b.MessageID == "" {
		return badRequest("give messageId: the message to restore the workspace to")
	}
	// The session may not be deleted while its files are put back (see gate); a delete
	// that came first leaves no session, checked next.
	defer s.gate.enter(sessionKey(ses.ID))()
	if _, err := s.session(r.Context(), ses.ID); err != nil {
		return err
	}
	msg, err := s.db.Message(r.Context(), b.MessageID)
	if err != nil || msg.SessionID != ses.ID {
		return notFound("message %s is not in session %s", b.MessageID, ses.ID)
	}
	report, err := s.harness.Restore(r.Context(), ses.ID, b.MessageID, undo.RestoreOptions{Force: b.Force, DryRun: b.DryRun, Partial: b.Partial})
	switch {
	case errors.Is(err, harness.ErrBusy):
		return errorf(http.StatusConflict, codeBusy, "session %s is running a turn; stop it or wait before restoring", ses.ID)
	case errors.Is(err, harness.ErrNoSnapshots):
		return errorf(http.StatusServiceUnavailable, codeUnavailable, "%v", err)
	case errors.Is(err, undo.ErrRefused):
		ae := errorf(http.StatusConflict, codeConflict, "%v", err)
		ae.Details = map[string]any{"report": report}
		return ae
	case err != nil:
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"report": report})
	return nil
}

package server

import (
	"errors"
	"net/http"
	"strings"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/undo"
)

// The conversation controls (docs/api.md "Conversation controls"): queue a message while a
// turn runs, edit and resend a user message, regenerate the last answer, fork a session.

// controlErr answers the harness's errors of a control the way startTurn does.
func controlErr(sessionID string, err error) error {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return err
	case errors.Is(err, harness.ErrBusy):
		return busyError(sessionID, err, "wait for turn.finished or stop it")
	case errors.Is(err, harness.ErrClosed):
		return errorf(http.StatusServiceUnavailable, codeUnavailable, "the server is shutting down")
	case errors.Is(err, harness.ErrNoSnapshots):
		return errorf(http.StatusServiceUnavailable, codeUnavailable, "%v", err)
	case errors.Is(err, undo.ErrRefused):
		return errorf(http.StatusConflict, codeConflict, "%v (send restore: false to keep the files as they are, or force: true)", err)
	case errors.Is(err, harness.ErrNotUserMessage), errors.Is(err, harness.ErrBadInput):
		return badRequest("%v", err)
	case errors.Is(err, store.ErrUnfinished):
		return errorf(http.StatusConflict, codeBusy, "%v", err)
	case errors.Is(err, store.ErrNotFound):
		return notFound("%v", err)
	}
	return err
}

// queueMessage sends the message now when the session is idle (202 with the turn), else
// queues it to be sent when the running turn ends (202 with queued).
func (s *Server) queueMessage(w http.ResponseWriter, r *http.Request) error {
	ses, in, err := s.messageRequest(w, r)
	if err != nil {
		return err
	}
	started := s.gate.starting()
	q, turn, err := s.harness.Enqueue(r.Context(), ses.ID, in)
	started()
	if err != nil {
		return controlErr(ses.ID, err)
	}
	if turn != nil {
		writeJSON(w, http.StatusAccepted, map[string]any{"turn": turn})
		return nil
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"queued": q})
	return nil
}

func (s *Server) listQueue(w http.ResponseWriter, r *http.Request) error {
	ses, err := s.session(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": s.harness.Queue(ses.ID)})
	return nil
}

func (s *Server) unqueue(w http.ResponseWriter, r *http.Request) error {
	ses, err := s.session(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	if !s.harness.Unqueue(r.Context(), ses.ID, r.PathValue("queueId")) {
		return notFound("no message %s is queued in session %s (it may have been sent)", r.PathValue("queueId"), ses.ID)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type resendBody struct {
	Text   string      `json:"text"`
	Images []imageBody `json:"images"`
	// Resources attach MCP resources to the edited message, read now (as for a turn).
	Resources []resourceRef `json:"resources"`
	// Files attach mentioned workspace files (@path) to the edited message, read now.
	Files []fileRef `json:"files"`
	// Restore puts the files back as they were before the message first (Restore to here).
	Restore bool `json:"restore"`
	Force   bool `json:"force"`
}

func (b resendBody) restoreOptions() *undo.RestoreOptions {
	if !b.Restore {
		return nil
	}
	return &undo.RestoreOptions{Force: b.Force}
}

// resendMessage edits a user message and sends it again: the conversation is cut back to
// before it and goes on from the new text.
func (s *Server) resendMessage(w http.ResponseWriter, r *http.Request) error {
	var b resendBody
	if err := decodeBody(w, r, &b); err != nil {
		return err
	}
	ses, err := s.session(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	in, err := turnBody{Text: b.Text, Images: b.Images, Resources: b.Resources, Files: b.Files}.input()
	if err != nil {
		return err
	}
	if _, _, err := s.providers.Model(r.Context(), ses.Provider, ses.Model); err != nil {
		return errorf(http.StatusBadRequest, codeNoProvider, "%v", err)
	}
	if in.Resources, err = s.readResources(r.Context(), ses, b.Resources); err != nil {
		return err
	}
	files, err := s.readMentions(r.Context(), ses, b.Files)
	if err != nil {
		return err
	}
	in.Resources = append(in.Resources, files...)
	started := s.gate.starting()
	res, err := s.harness.Resend(r.Context(), ses.ID, r.PathValue("messageId"), in, harness.ResendOptions{Restore: b.restoreOptions()})
	started()
	if err != nil {
		return controlErr(ses.ID, err)
	}
	writeJSON(w, http.StatusAccepted, res)
	return nil
}

type regenerateBody struct {
	Restore bool `json:"restore"`
	Force   bool `json:"force"`
}

// regenerate answers the last user message again.
func (s *Server) regenerate(w http.ResponseWriter, r *http.Request) error {
	var b regenerateBody
	if r.ContentLength != 0 {
		if err := decodeBody(w, r, &b); err != nil {
			return err
		}
	}
	ses, err := s.session(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	if _, _, err := s.providers.Model(r.Context(), ses.Provider, ses.Model); err != nil {
		return errorf(http.StatusBadRequest, codeNoProvider, "%v", err)
	}
	started := s.gate.starting()
	res, err := s.harness.Regenerate(r.Context(), ses.ID, resendBody{Restore: b.Restore, Force: b.Force}.restoreOptions())
	started()
	if err != nil {
		return controlErr(ses.ID, err)
	}
	writeJSON(w, http.StatusAccepted, res)
	return nil
}

type forkBody struct {
	MessageID string `json:"messageId"`
	Title     string `json:"title"`
}

// fork makes a new session holding the conversation up to and with a message.
func (s *Server) fork(w http.ResponseWriter, r *http.Request) error {
	var b forkBody
	if err := decodeBody(w, r, &b); err != nil {
		return err
	}
	ses, err := s.session(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	if b.MessageID == "" {
		return badRequest("give messageId: the last message the fork keeps")
	}
	title := strings.TrimSpace(b.Title)
	if title == "" {
		title = strings.TrimSpace(ses.Title + " (fork)")
	}
	if len(title) > 200 {
		return badRequest("title is %d bytes; keep it to 200", len(title))
	}
	// The source may not be deleted meanwhile (see gate).
	defer s.gate.enter(sessionKey(ses.ID), workspaceKey(ses.WorkspaceID))()
	fork, err := s.harness.Fork(r.Context(), ses.ID, b.MessageID, title)
	if err != nil {
		return controlErr(ses.ID, err)
	}
	view, err := s.viewSession(r.Context(), fork)
	if err != nil {
		return err
	}
	s.publishServer(r.Context(), "session.created", map[string]any{"session": view, "forkedFrom": ses.ID})
	writeJSON(w, http.StatusCreated, view)
	return nil
}

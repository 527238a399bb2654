package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/store"
)

// sessionView is a session as the API shows it: the stored fields, whether a turn runs and
// the last event number (subscribe after it once the messages are loaded).
type sessionView struct {
	store.Session
	Running bool  `json:"running"`
	LastSeq int64 `json:"lastSeq"`
	usageView
	// Waiting is how many questions of the session wait for a person (session.status
	// keeps it live).
	Waiting int `json:"waiting"`
	// Parent, for a subagent's session, names the session and the task call that started
	// it (docs/harness.md, subagents).
	Parent *store.Subagent `json:"parent,omitempty"`
	// Schedule names the schedule and occurrence that started the session, when one did.
	Schedule *scheduleRef `json:"schedule,omitempty"`
	// Goal is the session's goal (docs/harness.md, "Goal mode"), when it has one.
	Goal *harness.Goal `json:"goal,omitempty"`
}

func (s *Server) viewSession(ctx context.Context, ses store.Session) (sessionView, error) {
	ref, err := s.scheduleRefOf(ctx, ses.ID)
	if err != nil {
		return sessionView{}, err
	}
	return s.viewSessionWith(ctx, ses, ref)
}

// viewSessionWith is viewSession with the session's schedule run read already.
func (s *Server) viewSessionWith(ctx context.Context, ses store.Session, ref *scheduleRef) (sessionView, error) {
	last, err := s.db.LastEventSeq(ctx, ses.ID)
	if err != nil {
		return sessionView{}, err
	}
	u, err := s.usageOf(ctx, ses.ID)
	if err != nil {
		return sessionView{}, err
	}
	parent, err := s.parentOf(ctx, ses.ID)
	if err != nil {
		return sessionView{}, err
	}
	goal, err := s.harness.Goal(ctx, ses.ID)
	if err != nil {
		return sessionView{}, err
	}
	ses.Agent = agentName(ses)
	return sessionView{Session: ses, Running: s.running(ctx, ses.ID), LastSeq: last, usageView: u, Waiting: len(s.pending(ctx, ses.ID)),
		Parent: parent, Schedule: ref, Goal: goal}, nil
}

// viewSessions views a list of sessions, reading their schedule runs once per workspace.
func (s *Server) viewSessions(ctx context.Context, list []store.Session) ([]sessionView, error) {
	out := make([]sessionView, 0, len(list))
	refs := map[string]map[string]store.ScheduledSession{} // by workspace, then session
	for _, ses := range list {
		byID, ok := refs[ses.WorkspaceID]
		if !ok {
			var err error
			if byID, err = s.db.ScheduledSessions(ctx, ses.WorkspaceID); err != nil {
				return nil, err
			}
			refs[ses.WorkspaceID] = byID
		}
		var ref *scheduleRef
		if ss, ok := byID[ses.ID]; ok {
			ref = refOf(ss.ScheduleRun, ss.ScheduleName)
		}
		v, err := s.viewSessionWith(ctx, ses, ref)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func (s *Server) session(ctx context.Context, id string) (store.Session, error) {
	ses, err := s.db.Session(ctx, id)
	return ses, storeErr(err, "session "+id)
}

func (s *Server) listWorkspaceSessions(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if _, err := s.workspace(r.Context(), id); err != nil {
		return err
	}
	list, err := s.db.ListSessions(r.Context(), id)
	if err != nil {
		return err
	}
	views, err := s.viewSessions(r.Context(), list)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": views})
	return nil
}

func (s *Server) listAllSessions(w http.ResponseWriter, r *http.Request) error {
	wss, err := s.db.ListWorkspaces(r.Context())
	if err != nil {
		return err
	}
	var all []store.Session
	for _, ws := range wss {
		list, err := s.db.ListSessions(r.Context(), ws.ID)
		if err != nil {
			return err
		}
		all = append(all, list...)
	}
	views, err := s.viewSessions(r.Context(), all)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": views})
	return nil
}

type sessionBody struct {
	Title    *string `json:"title"`
	Provider *string `json:"provider"`
	Model    *string `json:"model"`
	// Agent names the agent preset of the session's next turns ("build", "plan", a file's).
	Agent *string `json:"agent"`
}

// apply copies the body's fields onto ses, checking that a named provider is configured.
func (s *Server) apply(b sessionBody, ses *store.Session) error {
	if b.Title != nil {
		ses.Title = strings.TrimSpace(*b.Title)
	}
	if b.Provider != nil {
		name := strings.TrimSpace(*b.Provider)
		if name != "" {
			if _, ok := s.providers.Set().Lookup(name); !ok {
				return badRequest("provider %q is not configured (configured: %s); leave it empty for the default", name, s.providers.names())
			}
		}
		ses.Provider = name
	}
	if b.Model != nil {
		ses.Model = strings.TrimSpace(*b.Model)
	}
	if len(ses.Title) > 500 {
		return badRequest("the title is %d characters; keep it under 500", len(ses.Title))
	}
	return nil
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) error {
	var b sessionBody
	if err := decodeBody(w, r, &b); err != nil {
		return err
	}
	ws, err := s.workspace(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	ses := store.Session{WorkspaceID: ws.ID}
	if err := s.apply(b, &ses); err != nil {
		return err
	}
	if err := s.applyAgent(r.Context(), b.Agent, &ses); err != nil {
		return err
	}
	ses, err = s.db.CreateSession(r.Context(), ses)
	if err != nil {
		return storeErr(err, "workspace "+ws.ID)
	}
	v, err := s.viewSession(r.Context(), ses)
	if err != nil {
		return err
	}
	// Every client's session list shows it (another tab, the terminal).
	s.publishServer(r.Context(), "session.created", map[string]any{"session": v})
	writeJSON(w, http.StatusCreated, v)
	return nil
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) error {
	ses, err := s.session(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	v, err := s.viewSession(r.Context(), ses)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) patchSession(w http.ResponseWriter, r *http.Request) error {
	var b sessionBody
	if err := decodeBody(w, r, &b); err != nil {
		return err
	}
	ses, err := s.session(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	if err := s.apply(b, &ses); err != nil {
		return err
	}
	if err := s.applyAgent(r.Context(), b.Agent, &ses); err != nil {
		return err
	}
	if ses, err = s.db.UpdateSession(r.Context(), ses); err != nil {
		return storeErr(err, "session "+ses.ID)
	}
	shown := ses
	shown.Agent = agentName(ses)
	payload, err := json.Marshal(map[string]any{"session": shown})
	if err != nil {
		return err
	}
	if _, err := s.hub.Publish(r.Context(), ses.ID, store.NewEvent{Type: "session.updated", Payload: payload}); err != nil {
		return err
	}
	v, err := s.viewSession(r.Context(), ses)
	if err != nil {
		return err
	}
	s.publishServer(r.Context(), "session.updated", map[string]any{"session": v})
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	ses, err := s.session(r.Context(), id)
	if err != nil {
		return err
	}
	// Checked and deleted with no work starting in between (see gate).
	done := s.gate.deleting()
	err = s.sessionBusy(id)
	if err == nil {
		err = storeErr(s.db.DeleteSession(r.Context(), id), "session "+id)
	}
	done()
	if err != nil {
		return err
	}
	s.forgetSession(r.Context(), ses.WorkspaceID, id)
	s.publishServer(r.Context(), "session.deleted", map[string]any{"sessionId": id, "workspaceId": ses.WorkspaceID})
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// forgetSession drops what outlives a deleted session elsewhere: its grants, its clients'
// sockets, and what the host keeps for it (background commands, its temporary folder).
func (s *Server) forgetSession(ctx context.Context, workspaceID, id string) {
	s.sockets.deleted(id)
	if err := s.grants.EndSession(ctx, id); err != nil {
		s.log.Warn("forget the grants of a deleted session", "session", id, "error", err)
	}
	if err := s.host.EndSession(ctx, workspaceID, id); err != nil {
		s.log.Warn("end what the host keeps for a deleted session", "session", id, "error", err)
	}
}

// messagesSnapshotter reads a session's messages and its last event seq in one read
// transaction (a store that offers it; see listMessages).
type messagesSnapshotter interface {
	ListMessagesSnapshot(ctx context.Context, sessionID string, afterSeq int64, limit int) ([]store.Message, int64, error)
}

// listMessages answers the messages with lastSeq, the event to subscribe after. Read in one
// transaction with the messages when the store can; else read before them, so no event the
// messages do not show is missed (one they show may come again on the socket). Parts carry
// durationMs (store.Part's JSON).
func (s *Server) listMessages(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if _, err := s.session(r.Context(), id); err != nil {
		return err
	}
	after, err := queryInt(r, "after", 0)
	if err != nil {
		return err
	}
	limit, err := queryInt(r, "limit", 0)
	if err != nil {
		return err
	}
	if (after != 0 || limit != 0) && (limit == 0 || limit > 1000) {
		limit = 1000
	}
	var msgs []store.Message
	var last int64
	if snap, ok := any(s.db).(messagesSnapshotter); ok {
		msgs, last, err = snap.ListMessagesSnapshot(r.Context(), id, after, int(limit))
	} else if last, err = s.db.LastEventSeq(r.Context(), id); err == nil {
		msgs, err = s.db.ListMessagesAfter(r.Context(), id, after, int(limit))
	}
	if err != nil {
		return err
	}
	if msgs == nil {
		msgs = []store.Message{}
	}
	// A tool part's images for the model (store.ToolContentType) are in its visualization
	// for people already: they are not sent twice.
	for i := range msgs {
		for j := range msgs[i].Parts {
			if msgs[i].Parts[j].MediaType == store.ToolContentType {
				msgs[i].Parts[j].Data = nil
			}
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"messages": msgs, "lastSeq": last})
	return nil
}

// partImage answers an image part's bytes with its media type: how a client that learnt of
// the part from message.created (which leaves the bytes out) draws it.
func (s *Server) partImage(w http.ResponseWriter, r *http.Request) error {
	id, partID := r.PathValue("id"), r.PathValue("partId")
	if _, err := s.session(r.Context(), id); err != nil {
		return err
	}
	part, err := s.db.Part(r.Context(), partID)
	if errors.Is(err, store.ErrNotFound) {
		return notFound("part %s not found", partID)
	}
	if err != nil {
		return err
	}
	msg, err := s.db.Message(r.Context(), part.MessageID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && msg.SessionID != id) {
		return notFound("part %s is not in session %s", partID, id)
	}
	if err != nil {
		return err
	}
	if part.Kind != store.PartImage {
		return notFound("part %s is a %s part, not an image", partID, part.Kind)
	}
	w.Header().Set("Content-Type", part.MediaType)
	w.Header().Set("Content-Length", strconv.Itoa(len(part.Data)))
	// A part's image never changes.
	w.Header().Set("Cache-Control", "private, max-age=31536000, immutable")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(part.Data)
	return nil
}

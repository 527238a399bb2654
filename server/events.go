package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/jean2/jean2/ask"
	"github.com/jean2/jean2/hub"
	"github.com/jean2/jean2/store"
)

// WebSocket close codes beyond the standard ones.
const (
	// CloseSlowSubscriber closes a socket whose client fell too far behind the live
	// events; it reconnects with after= the last seq it saw.
	CloseSlowSubscriber websocket.StatusCode = 4008
	// CloseSessionDeleted closes the sockets of a session that was deleted (or whose
	// workspace was); reconnecting gets 404.
	CloseSessionDeleted websocket.StatusCode = 4004
)

// sessionSockets are the open sockets of each session, so a delete can close them.
type sessionSockets struct {
	mu sync.Mutex
	by map[string]map[*openSocket]struct{}
}

// openSocket is one socket of a session: cancel ends it; deleted says it ends because the
// session was deleted (set before cancel).
type openSocket struct {
	cancel  context.CancelFunc
	deleted atomic.Bool
}

func (ss *sessionSockets) add(sessionID string, cancel context.CancelFunc) (_ *openSocket, remove func()) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.by == nil {
		ss.by = map[string]map[*openSocket]struct{}{}
	}
	if ss.by[sessionID] == nil {
		ss.by[sessionID] = map[*openSocket]struct{}{}
	}
	o := &openSocket{cancel: cancel}
	ss.by[sessionID][o] = struct{}{}
	return o, func() {
		ss.mu.Lock()
		defer ss.mu.Unlock()
		delete(ss.by[sessionID], o)
		if len(ss.by[sessionID]) == 0 {
			delete(ss.by, sessionID)
		}
	}
}

// deleted ends the sockets of a session that was deleted.
func (ss *sessionSockets) deleted(sessionID string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for o := range ss.by[sessionID] {
		o.deleted.Store(true)
		o.cancel()
	}
}

const (
	wsWriteTimeout = 10 * time.Second
	wsPingEvery    = 30 * time.Second
	// wsReadLimit bounds one client frame: an answer of the largest size the hub takes,
	// plus its envelope.
	wsReadLimit = hub.MaxAnswerBytes + 16<<10
)

func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if _, err := s.session(r.Context(), id); err != nil {
		return err
	}
	return s.writeEvents(w, r, id)
}

func (s *Server) listServerEvents(w http.ResponseWriter, r *http.Request) error {
	return s.writeEvents(w, r, "")
}

func (s *Server) writeEvents(w http.ResponseWriter, r *http.Request, sessionID string) error {
	after, err := queryInt(r, "after", 0)
	if err != nil {
		return err
	}
	limit, err := queryInt(r, "limit", 1000)
	if err != nil {
		return err
	}
	if limit == 0 || limit > 10000 {
		limit = 10000
	}
	var evs []store.Event
	if types := r.URL.Query().Get("types"); types != "" && sessionID != "" {
		// The last limit events of these types, whatever after says: a reopened page reads
		// its answered asks so, without replaying the whole log.
		evs, err = s.db.EventsOfTypes(r.Context(), sessionID, strings.Split(types, ","), int(limit))
	} else {
		evs, err = s.db.EventsAfter(r.Context(), sessionID, after, int(limit))
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"events": viewEvents(evs)})
	return nil
}

// helloFrame is the first frame of a socket: where the log is and what waits for a person.
type helloFrame struct {
	Type        string           `json:"type"` // "hello"
	LastSeq     int64            `json:"lastSeq"`
	Running     bool             `json:"running"`
	PendingAsks []hub.PendingAsk `json:"pendingAsks"`
}

// clientFrame is a message from the client.
type clientFrame struct {
	Type   string          `json:"type"`
	Ref    string          `json:"ref,omitempty"`
	AskID  string          `json:"askId,omitempty"`
	Answer json.RawMessage `json:"answer,omitempty"`
}

// replyFrame answers a client frame.
type replyFrame struct {
	Type  string    `json:"type"` // ack or error
	Ref   string    `json:"ref,omitempty"`
	Error *apiError `json:"error,omitempty"`
}

func (s *Server) sessionSocket(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if _, err := s.session(r.Context(), id); err != nil {
		return err
	}
	return s.serveSocket(w, r, id)
}

func (s *Server) serverSocket(w http.ResponseWriter, r *http.Request) error {
	return s.serveSocket(w, r, "")
}

// serveSocket streams a session's log (or the server's, for "") to a WebSocket client and
// takes its answers and stops. The socket counts as an attached client while it is open.
func (s *Server) serveSocket(w http.ResponseWriter, r *http.Request, sessionID string) error {
	after, err := queryInt(r, "after", 0)
	if err != nil {
		return err
	}
	if !s.conns.add() {
		return errorf(http.StatusServiceUnavailable, codeUnavailable, "the server is shutting down")
	}
	defer s.conns.done()
	// The guard checked the Origin already; Accept checks it again the same way.
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return nil // Accept has answered the client
	}
	defer c.CloseNow()
	c.SetReadLimit(wsReadLimit)

	// The socket lives until the client goes, the server closes, or the log cannot be sent.
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	open := &openSocket{} // of the server's log: never deleted
	if sessionID != "" {
		var remove func()
		open, remove = s.sockets.add(sessionID, cancel)
		defer remove()
		// A delete that came between the check above and now has found no socket to end.
		if _, err := s.db.Session(ctx, sessionID); err != nil {
			c.Close(CloseSessionDeleted, "session deleted")
			return nil
		}
	}
	sub, err := s.hub.Subscribe(ctx, sessionID, after)
	if err != nil {
		c.Close(websocket.StatusInternalError, "cannot subscribe to the event log")
		return nil
	}
	// Deferred before sub.Close, so it runs after: the socket no longer counts as attached.
	defer s.notifyLeftWaiting(sessionID)
	defer sub.Close()
	if s.node != nil && sessionID != "" {
		s.node.Attach(ctx, sessionID) // asks made on other instances now wait for this client
	}

	if err := s.sendHello(ctx, c, sessionID); err != nil {
		return nil
	}

	// Reads have a context of their own: cancelling a read closes the connection at once,
	// and a server going down should close it with a status instead.
	readCtx, stopReading := context.WithCancel(context.Background())
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		defer cancel()
		s.readSocket(readCtx, ctx, c, sessionID)
	}()
	defer func() { stopReading(); <-readDone }()
	s.pumpSocket(ctx, c, sub, open)
	return nil
}

// sendHello tells a client that just subscribed where the log stands: its last seq, the
// asks that wait, and whether a turn runs. Subscribed first, so an ask made from now on
// goes to this client rather than the unattended policy; an ask made meanwhile may be in
// both the hello and the events.
func (s *Server) sendHello(ctx context.Context, c *websocket.Conn, sessionID string) error {
	last, err := s.db.LastEventSeq(ctx, sessionID)
	if err != nil {
		s.log.Warn("socket: read the last event seq", "session", sessionID, "error", err)
	}
	hello := helloFrame{Type: "hello", LastSeq: last, PendingAsks: s.pending(ctx, sessionID)}
	if sessionID != "" {
		hello.Running = s.running(ctx, sessionID)
	}
	return writeFrame(c, hello)
}

// pumpSocket sends the log's events to the client and pings it, until the subscription
// ends, a write fails or ctx ends; it closes the socket with the status that says why.
func (s *Server) pumpSocket(ctx context.Context, c *websocket.Conn, sub *hub.Subscription, open *openSocket) {
	ping := time.NewTicker(wsPingEvery)
	defer ping.Stop()
	for {
		select {
		case ev, ok := <-sub.Events():
			if !ok {
				closeForSubscription(c, sub.Err(), s.ctx.Err() != nil, open.deleted.Load())
				return
			}
			if err := writeFrame(c, viewEvent(ev)); err != nil {
				return
			}
		case <-ping.C:
			pctx, pcancel := context.WithTimeout(context.Background(), wsWriteTimeout)
			err := c.Ping(pctx)
			pcancel()
			if err != nil {
				return
			}
		case <-ctx.Done():
			switch {
			case open.deleted.Load():
				c.Close(CloseSessionDeleted, "session deleted")
			case s.ctx.Err() != nil:
				c.Close(websocket.StatusGoingAway, "the server is shutting down")
			}
			return
		}
	}
}

// closeForSubscription closes c with a status that tells the client what to do.
func closeForSubscription(c *websocket.Conn, err error, shuttingDown, deleted bool) {
	switch {
	case deleted:
		c.Close(CloseSessionDeleted, "session deleted")
	case errors.Is(err, hub.ErrSlowSubscriber):
		c.Close(CloseSlowSubscriber, "slow subscriber: reconnect with after= the last seq received")
	case shuttingDown || errors.Is(err, hub.ErrClosed):
		c.Close(websocket.StatusGoingAway, "the server is shutting down")
	default:
		c.Close(websocket.StatusInternalError, "the event log ended")
	}
}

// writeFrame sends v as a JSON text frame. The write is bounded by its own timeout, not by
// the socket's context: a cancelled write tears the connection down without a close
// frame, and a server going down should close it with "going away" instead.
func writeFrame(c *websocket.Conn, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(context.Background(), wsWriteTimeout)
	defer cancel()
	return c.Write(wctx, websocket.MessageText, data)
}

// readSocket handles the client's frames until it goes away (or readCtx ends); ctx bounds
// the work a frame starts and the reply.
func (s *Server) readSocket(readCtx, ctx context.Context, c *websocket.Conn, sessionID string) {
	for {
		typ, data, err := c.Read(readCtx)
		if err != nil {
			return
		}
		reply := replyFrame{Type: "ack"}
		var f clientFrame
		switch {
		case typ != websocket.MessageText:
			reply.Error = badRequest("send JSON text frames")
		case json.Unmarshal(data, &f) != nil:
			reply.Error = badRequest("the frame is not a JSON object such as {\"type\":\"answer\",\"askId\":\"…\",\"answer\":…}")
		default:
			reply.Ref = f.Ref
			if err := s.handleFrame(ctx, sessionID, f); err != nil {
				reply.Error = asAPIError(err, s)
			}
		}
		if reply.Error != nil {
			reply.Type = "error"
		}
		if err := writeFrame(c, reply); err != nil {
			return
		}
	}
}

func (s *Server) handleFrame(ctx context.Context, sessionID string, f clientFrame) error {
	switch f.Type {
	case "answer":
		if sessionID == "" {
			return badRequest("answer a session's asks on the session's socket")
		}
		if f.AskID == "" {
			return badRequest("an answer frame needs askId")
		}
		return s.answer(ctx, sessionID, f.AskID, f.Answer)
	case "stop":
		if sessionID == "" {
			return badRequest("stop a session's turn on the session's socket")
		}
		_, _, err := s.stop(ctx, sessionID)
		return err
	case "ping":
		return nil
	}
	return badRequest("unknown frame type %q: use answer or stop", f.Type)
}

// asAPIError is err as the API reports it; an unexpected error is logged and hidden.
func asAPIError(err error, s *Server) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	s.log.Error("socket frame failed", "error", err)
	return errorf(http.StatusInternalServerError, codeInternal, "the server failed; its log says why")
}

// answer answers a pending ask, mapping the hub's errors to the API's.
func (s *Server) answer(ctx context.Context, sessionID, askID string, answer json.RawMessage) error {
	err := s.hub.Answer(ctx, sessionID, askID, answer)
	if errors.Is(err, hub.ErrNoSuchAsk) && s.node != nil {
		// Not waiting here: maybe on the instance running the turn.
		err = s.node.Answer(ctx, sessionID, askID, answer)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, hub.ErrNoSuchAsk):
		return notFound("ask %s is not pending: it was answered, timed out or cancelled already", askID)
	case errors.Is(err, ask.ErrInvalidAnswer):
		return errorf(http.StatusUnprocessableEntity, codeInvalidAnswer, "%v", err)
	}
	return fmt.Errorf("answer ask %s: %w", askID, err)
}

type answerBody struct {
	Answer json.RawMessage `json:"answer"`
}

func (s *Server) listAsks(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if _, err := s.session(r.Context(), id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"asks": s.pending(r.Context(), id)})
	return nil
}

func (s *Server) postAnswer(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if _, err := s.session(r.Context(), id); err != nil {
		return err
	}
	var b answerBody
	if err := decodeBody(w, r, &b); err != nil {
		return err
	}
	if len(b.Answer) == 0 {
		return badRequest("give the answer as \"answer\": JSON of the ask's type")
	}
	if err := s.answer(r.Context(), id, r.PathValue("askId"), b.Answer); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true})
	return nil
}

// publishServer puts an event on the server's own log; a failure is logged, not returned:
// the change it reports has happened.
func (s *Server) publishServer(ctx context.Context, typ string, payload any) {
	s.publish(ctx, "", typ, payload)
}

// publishOn puts an event on a session's log ("" for the server's) for as long as the
// server runs, whatever becomes of the request that caused it.
func (s *Server) publishOn(sessionID, typ string, payload any) {
	s.publish(s.ctx, sessionID, typ, payload)
}

func (s *Server) publish(ctx context.Context, sessionID, typ string, payload any) {
	data, err := json.Marshal(payload)
	if err == nil {
		_, err = s.hub.Publish(ctx, sessionID, store.NewEvent{Type: typ, Payload: data})
	}
	if err != nil {
		s.log.Warn("publish an event", "session", sessionID, "type", typ, "error", err)
	}
}

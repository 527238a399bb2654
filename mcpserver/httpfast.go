package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The fast path for tools/call over streamable HTTP (sessions of 2025-11-25 and earlier).
//
// The go-sdk answers every POSTed request with an SSE stream (a priming event, then the
// answer, both kept in its event store so a client whose stream dropped resumes it with
// Last-Event-ID) after decoding the body, then the params again, into fresh 32 KB buffers.
// The spec lets a server answer a request with either an SSE stream or one JSON object
// (Streamable HTTP, "Sending Messages to the Server": the client MUST support both), so
// HTTPHandler answers a tools/call itself when nothing but the answer can go back on its
// stream, and answers it as JSON when it finished within FastJSONWait:
//
//   - the call is a tools/call of a listed tool, one request (not a batch), with no task,
//     no progress token, not a multi-round-trip retry;
//   - its session was made by this server, is initialized, on a classic revision (before
//     2026-07-28), and the client declared neither elicitation nor sampling (so the call
//     sends it no request) and never set a log level (so the call sends it no log);
//   - the request's headers are ones the go-sdk would take (Accept naming both types, the
//     session's revision in MCP-Protocol-Version when there is one).
//
// A call that runs longer than FastJSONWait gets an SSE stream as the go-sdk would give
// it: a priming event with an id and a retry field (2025-11-25), then the answer. Its
// events are kept here (fastStreams), so a client whose stream dropped resumes it with a
// GET carrying Last-Event-ID as it would the go-sdk's: the call goes on meanwhile (as the
// go-sdk's do on a session), and the answer waits for the client, for fastStreamKeep after
// the call ended. So the only answers that are not resumable are the JSON ones, given by
// calls that ran less than FastJSONWait: a client that loses one loses it as it would lose
// the go-sdk's answer to a request whose stream dropped before its priming event.
//
// Everything else — and every message that is not a tools/call — goes to the go-sdk as
// before. notifications/cancelled naming a fast call cancels it (and goes on to the
// go-sdk, which knows no such call); the session's end (DELETE, timeout) and Close cancel
// the session's fast calls.

// DefaultFastJSONWait is how long a fast HTTP call may run and still be answered as
// JSON; past it the answer comes on a resumable SSE stream.
const DefaultFastJSONWait = 50 * time.Millisecond

// fastStreamKeep is how long the answer of a fast call answered over SSE waits for a
// client that lost its stream, after the call ended.
const fastStreamKeep = 5 * time.Minute

// fastStreamPrefix starts the ids of fast calls' SSE streams: the go-sdk's stream ids are
// random base-32 strings of digits and upper-case letters, so "f-" names none of them.
const fastStreamPrefix = "f-"

// httpFast is the fast HTTP calls' state, per Server.
type httpFast struct {
	mu       sync.Mutex
	closed   bool
	sessions map[string]*httpSession // by Mcp-Session-Id
	streams  map[string]*httpCall    // calls answered over SSE, by stream id, for Last-Event-ID
	served   [2]int64                // fast calls answered as JSON, and over SSE (for tests)
	// stateless fast calls (httpstateless.go) answered as JSON, and over SSE (for tests)
	stateless [2]int64
}

// httpSession is one session's fast calls; its context ends with the session.
type httpSession struct {
	ss      *mcp.ServerSession
	ctx     context.Context
	cancel  context.CancelFunc
	calls   map[jsonrpc.ID]context.CancelFunc // running, by request id
	logging bool                              // the client set a log level: no fast calls
}

// httpCall is a fast call's answer, once it ended.
type httpCall struct {
	session string
	done    chan struct{} // closed once resp is set
	resp    []byte        // the encoded JSON-RPC response
	ended   time.Time
}

// session returns the state of session id (made, with a watcher that cancels its calls
// when it ends, at its first use), or nil once the server closed.
func (f *httpFast) session(ss *mcp.ServerSession, id string) *httpSession {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	if hs := f.sessions[id]; hs != nil {
		return hs
	}
	if f.sessions == nil {
		f.sessions = map[string]*httpSession{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	hs := &httpSession{ss: ss, ctx: ctx, cancel: cancel, calls: map[jsonrpc.ID]context.CancelFunc{}}
	f.sessions[id] = hs
	go func() {
		_ = ss.Wait()
		cancel()
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.sessions, id)
		for sid, c := range f.streams {
			if c.session == id {
				delete(f.streams, sid)
			}
		}
	}()
	return hs
}

// find returns the state of session id if it has one.
func (f *httpFast) find(id string) *httpSession {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sessions[id]
}

// close cancels every fast call; none start after it.
func (f *httpFast) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	for _, hs := range f.sessions {
		hs.cancel()
	}
}

// findSession is the session with id that this server made, or nil.
func (s *Server) findSession(id string) *mcp.ServerSession {
	if hs := s.httpFast.find(id); hs != nil {
		return hs.ss
	}
	for ss := range s.mcp.Sessions() {
		if ss.ID() == id {
			return ss
		}
	}
	return nil
}

// notePost looks at a session POST the go-sdk will answer for what the fast path must
// know: a client that sets a log level gets no more fast calls; a cancellation naming a
// fast call cancels it.
func (s *Server) notePost(id string, body []byte) {
	switch {
	case bytes.Contains(body, []byte(`"logging/setLevel"`)):
		if ss := s.findSession(id); ss != nil {
			if hs := s.httpFast.session(ss, id); hs != nil {
				s.httpFast.mu.Lock()
				hs.logging = true
				s.httpFast.mu.Unlock()
			}
		}
	case bytes.Contains(body, []byte(`"notifications/cancelled"`)):
		hs := s.httpFast.find(id)
		if hs == nil {
			return
		}
		msg, err := jsonrpc.DecodeMessage(body)
		if err != nil {
			return
		}
		if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "notifications/cancelled" {
			var p struct {
				RequestID any `json:"requestId"`
			}
			if json.Unmarshal(req.Params, &p) != nil || p.RequestID == nil {
				return
			}
			rid, err := jsonrpc.MakeID(p.RequestID)
			if err != nil {
				return
			}
			s.httpFast.mu.Lock()
			cancel := hs.calls[rid]
			s.httpFast.mu.Unlock()
			if cancel != nil {
				cancel()
			}
		}
	}
}

// serveFastCall answers a session's POSTed tools/call on the fast path when it fits (see
// the top of this file) and reports whether it did; else the request is the go-sdk's,
// its body untouched.
func (s *Server) serveFastCall(w http.ResponseWriter, r *http.Request, id string, body []byte) bool {
	fc := s.fitFastCall(r, id, body)
	if fc == nil {
		return false
	}
	f := &s.httpFast
	f.mu.Lock()
	if fc.hs.logging || fc.hs.ctx.Err() != nil {
		f.mu.Unlock()
		return false
	}
	if _, taken := fc.hs.calls[fc.req.ID]; taken {
		f.mu.Unlock()
		out, _ := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: fc.req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: fmt.Sprintf("tools/call: request id %v is in use by a call still running in this session; use a new id", fc.req.ID.Raw())}})
		writeJSON(w, id, out)
		return true
	}
	ctx, cancel := context.WithCancel(fc.hs.ctx)
	fc.hs.calls[fc.req.ID] = cancel
	f.mu.Unlock()
	call := s.startFastCall(ctx, cancel, fc, id)
	s.answerFastCall(w, r, call, fc.init.ProtocolVersion, id)
	return true
}

// fastCall is a POSTed tools/call that fits the fast path.
type fastCall struct {
	req    *jsonrpc.Request
	ss     *mcp.ServerSession
	init   *mcp.InitializeParams
	params *mcp.CallToolParamsRaw
	h      mcp.ToolHandler
	hs     *httpSession
}

// fitFastCall returns the POSTed message as a fast call, or nil when it is not a
// tools/call the fast path may answer (anything the go-sdk would refuse, route to a
// stream or answer with its own error stays the go-sdk's).
func (s *Server) fitFastCall(r *http.Request, id string, body []byte) *fastCall {
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		return nil
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != "tools/call" || !req.ID.IsValid() || len(req.Params) == 0 {
		return nil
	}
	ss := s.findSession(id)
	if ss == nil {
		return nil // an unknown session: the go-sdk answers 404
	}
	init := ss.InitializeParams()
	if init == nil || usesRounds(ss) {
		return nil
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && v != init.ProtocolVersion {
		return nil // the go-sdk checks it
	}
	if !acceptsBoth(r.Header.Values("Accept")) {
		return nil // the go-sdk refuses it
	}
	if caps := clientCaps(ss); caps.Elicitation != nil || caps.Sampling != nil {
		return nil // the call may send the client a request, which must go on this stream
	}
	params, raw, ok := fastParams(req.Params)
	if !ok {
		return nil
	}
	if _, ok := raw["task"]; ok {
		return nil // a task the client was not offered: the go-sdk decides
	}
	if params.GetProgressToken() != nil {
		return nil // progress notifications go on the call's stream
	}
	h := s.toolHandler(params.Name)
	if h == nil {
		return nil // an unknown tool: the go-sdk's error
	}
	hs := s.httpFast.session(ss, id)
	if hs == nil {
		return nil
	}
	return &fastCall{req: req, ss: ss, init: init, params: params, h: h, hs: hs}
}

// startFastCall runs the call on its own goroutine; the call's done closes with its
// answer encoded.
func (s *Server) startFastCall(ctx context.Context, cancel context.CancelFunc, fc *fastCall, id string) *httpCall {
	f := &s.httpFast
	call := &httpCall{session: id, done: make(chan struct{})}
	s.calls.Add(1)
	go func() {
		defer s.calls.Done()
		res, err := fc.h(ctx, &mcp.CallToolRequest{Session: fc.ss, Params: fc.params})
		f.mu.Lock()
		delete(fc.hs.calls, fc.req.ID)
		f.mu.Unlock()
		cancel()
		if err == nil && res == nil {
			err = fmt.Errorf("tool %s: the handler returned no result", fc.params.Name)
		}
		if err == nil && res.Content == nil {
			res.Content = []mcp.Content{} // as the go-sdk: [] rather than null
		}
		call.resp = encodeCallResponse(fc.req.ID, res, err, "")
		call.ended = time.Now()
		close(call.done)
	}()
	return call
}

// answerFastCall writes the call's answer: as one JSON object when it ends within the
// wait (Options.FastJSONWait), else on an SSE stream, resumable on 2025-11-25 as the
// go-sdk's.
func (s *Server) answerFastCall(w http.ResponseWriter, r *http.Request, call *httpCall, version, id string) {
	f := &s.httpFast
	wait := s.opts.FastJSONWait
	if wait == 0 {
		wait = DefaultFastJSONWait
	}
	timer := time.NewTimer(wait)
	select {
	case <-call.done:
		timer.Stop()
		f.mu.Lock()
		f.served[0]++
		f.mu.Unlock()
		writeJSON(w, id, call.resp)
		return
	case <-timer.C:
	}
	sid := fastStreamPrefix + randomID()
	resumable := version >= rev20251125
	f.mu.Lock()
	f.served[1]++
	if resumable {
		f.pruneStreams(time.Now())
		if f.streams == nil {
			f.streams = map[string]*httpCall{}
		}
		f.streams[sid] = call
	}
	f.mu.Unlock()
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache, no-transform")
	hdr.Set("Connection", "keep-alive")
	hdr.Set("Mcp-Session-Id", id)
	w.WriteHeader(http.StatusOK)
	if resumable {
		if err := writeEvent(w, "event: prime\nid: "+sid+"_0\nretry: "+strconv.FormatInt(DefaultSSERetry.Milliseconds(), 10)+"\ndata: \n\n"); err != nil {
			return // gone: the answer waits for its resumption
		}
	}
	select {
	case <-call.done:
		_ = writeEvent(w, answerEvent(sid, call.resp))
	case <-r.Context().Done():
		// The client lost the stream; the call goes on and its answer waits (fastStreams).
	}
}

// resumeFastStream answers a GET whose Last-Event-ID names a fast call's stream: the
// answer, once the call ended, unless the client had it already. It reports false for any
// other GET, which is the go-sdk's.
func (s *Server) resumeFastStream(w http.ResponseWriter, r *http.Request) bool {
	last := r.Header.Get("Last-Event-ID")
	if r.Method != http.MethodGet || !strings.HasPrefix(last, fastStreamPrefix) {
		return false
	}
	id := r.Header.Get("Mcp-Session-Id")
	sid, idx, ok := strings.Cut(last, "_")
	f := &s.httpFast
	f.mu.Lock()
	call := f.streams[sid]
	f.mu.Unlock()
	if !ok || call == nil || call.session != id || id == "" {
		http.Error(w, fmt.Sprintf("Last-Event-ID %q names no stream of this session that can be resumed (it ended more than %s ago, or the session is gone): call the tool again", last, fastStreamKeep), http.StatusNotFound)
		return true
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache, no-transform")
	hdr.Set("Mcp-Session-Id", id)
	w.WriteHeader(http.StatusOK)
	if idx != "0" {
		return true // the client had the answer: the stream has nothing more
	}
	select {
	case <-call.done:
		_ = writeEvent(w, answerEvent(sid, call.resp))
	case <-r.Context().Done():
	}
	return true
}

// pruneStreams forgets the answers that waited fastStreamKeep. Called with f.mu held.
func (f *httpFast) pruneStreams(now time.Time) {
	for sid, c := range f.streams {
		select {
		case <-c.done:
			if now.Sub(c.ended) > fastStreamKeep {
				delete(f.streams, sid)
			}
		default:
		}
	}
}

// answerEvent is the SSE event carrying a fast call's answer on stream sid.
func answerEvent(sid string, resp []byte) string {
	return "event: message\nid: " + sid + "_1\ndata: " + string(resp) + "\n\n"
}

// writeEvent writes one SSE event and flushes it.
func writeEvent(w http.ResponseWriter, ev string) error {
	if _, err := io.WriteString(w, ev); err != nil {
		return err
	}
	return http.NewResponseController(w).Flush()
}

// writeJSON answers a POST with one JSON-RPC message.
func writeJSON(w http.ResponseWriter, sessionID string, out []byte) {
	w.Header().Set("Content-Type", "application/json")
	if sessionID != "" { // none for a stateless request
		w.Header().Set("Mcp-Session-Id", sessionID)
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	_, _ = w.Write(out)
}

// encodeCallResponse encodes a call's answer as the go-sdk would (callResponse).
func encodeCallResponse(id jsonrpc.ID, res *mcp.CallToolResult, err error, resultType string) []byte {
	resp := callResponse(id, res, err, resultType)
	out, eerr := jsonrpc.EncodeMessage(resp)
	if eerr != nil {
		out, _ = jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("encoding the answer: %v", eerr)}})
	}
	return out
}

// acceptsBoth reports whether Accept names application/json and text/event-stream (or
// wildcards covering them), matched as the go-sdk matches them for a POST.
func acceptsBoth(values []string) bool {
	var json, stream bool
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(part), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				json = true
			case "text/event-stream", "text/*":
				stream = true
			case "*/*":
				json, stream = true, true
			}
		}
	}
	return json && stream
}

// DefaultHTTPSessionTimeout closes a streamable HTTP session that had no POST in flight for
// this long.
const DefaultHTTPSessionTimeout = 30 * time.Minute

// idleSessions closes HTTP sessions left idle, in place of the go-sdk's SessionTimeout:
// the go-sdk counts only the POSTs it serves, so a client whose calls all took the fast
// path would have its session closed under it. Like the go-sdk's, the clock of a session
// stops while a POST of it is being answered and starts again when the last one ends.
type idleSessions struct {
	mu sync.Mutex
	m  map[string]*idleSession
}

type idleSession struct {
	refs  int
	timer *time.Timer
}

// track starts the idle clock of a new session; expire runs once it ran out.
func (t *idleSessions) track(id string, timeout time.Duration, expire func(id string)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]*idleSession{}
	}
	if t.m[id] != nil {
		return
	}
	e := &idleSession{}
	e.timer = time.AfterFunc(timeout, func() {
		t.mu.Lock()
		if t.m[id] != e || e.refs > 0 {
			t.mu.Unlock()
			return // a POST started as it ran out
		}
		delete(t.m, id)
		t.mu.Unlock()
		expire(id)
	})
	t.m[id] = e
}

// start stops a session's clock while one of its POSTs is answered.
func (t *idleSessions) start(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.m[id]; e != nil {
		if e.refs == 0 {
			e.timer.Stop()
		}
		e.refs++
	}
}

// end starts the clock again once the session's last POST was answered.
func (t *idleSessions) end(id string, timeout time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.m[id]; e != nil {
		if e.refs--; e.refs == 0 {
			e.timer.Reset(timeout)
		}
	}
}

// closeAll stops every clock (Server.Close).
func (t *idleSessions) closeAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range t.m {
		e.timer.Stop()
	}
	t.m = nil
}

// expireSession closes session id, left idle.
func (s *Server) expireSession(id string) {
	if ss := s.findSession(id); ss != nil {
		s.log.Debug("mcp: closing an idle HTTP session", "session", id)
		_ = ss.Close()
	}
}

// callResponse is a call's answer as the go-sdk would make it: the result with HTML
// characters unescaped, and resultType when given (2026-07-28: the go-sdk's field for it is
// unexported, so it is added to the encoded object, where the go-sdk's encoder puts it).
func callResponse(id jsonrpc.ID, res *mcp.CallToolResult, err error, resultType string) *jsonrpc.Response {
	resp := &jsonrpc.Response{ID: id, Error: err}
	if err != nil {
		return resp
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if merr := enc.Encode(res); merr != nil {
		resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("encoding the result: %v", merr)}
		return resp
	}
	resp.Result = bytes.TrimRight(buf.Bytes(), "\n")
	if resultType != "" && len(resp.Result) > 1 {
		obj := resp.Result[:len(resp.Result)-1] // without its closing brace
		if len(obj) > 1 {
			obj = append(obj, ',')
		}
		resp.Result = append(append(obj, `"resultType":"`+resultType+`"`...), '}')
	}
	return resp
}

package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultSSERetry is the reconnection delay jean2 gives a client in the priming event of
// each SSE stream (the `retry` field of SEP-1699): after a stream drops, the client waits
// this long and resumes it with Last-Event-ID.
const DefaultSSERetry = time.Second

// Revisions that change what an SSE stream carries.
const (
	rev20251125 = "2025-11-25" // priming events and the retry field (SEP-1699)
	rev20260728 = "2026-07-28" // stateless: no sessions, input requests by retry (SEP-2575, SEP-2322)
)

// HTTPHandler serves MCP over streamable HTTP, one MCP session per client. It does no
// authentication of its own: the server that mounts it (jean2 serve, at /mcp) puts its
// auth in front of it. Requests through a localhost address with another Host header are
// refused (DNS rebinding protection).
//
// Requests on 2026-07-28 or later (the MCP-Protocol-Version header) are served statelessly,
// beside the sessions of earlier revisions: no session id, each request on its own, so any
// replica behind a load balancer answers it. One exception stays with the replica that
// started it: a call waiting for the client's answer to an ask is parked in that process
// under its requestState, so the retry carrying the answer must reach the same replica
// (another answers that the requestState names no waiting call, and says to call again).
//
// Each SSE stream of a session on 2025-11-25 or later opens with a priming event (an id
// and empty data) that carries a `retry` field, and its events are kept (10 MB per
// server, the go-sdk's memory store) so that a client whose stream dropped resumes it with
// Last-Event-ID instead of losing the call's answer.
//
// A session's tools/call that can send the client nothing but its answer takes a fast path
// beside the go-sdk (httpfast.go): answered as JSON when it ends within FastJSONWait, else
// on a resumable SSE stream of its own. Sessions left idle are closed after
// HTTPSessionTimeout, counting those calls too.
func (s *Server) HTTPHandler() http.Handler {
	getServer := func(*http.Request) *mcp.Server { return s.mcp }
	sessions := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Logger: sdkLogger(s.log),
		// No SessionTimeout: idleSessions (httpfast.go) keeps it, counting fast calls too.
		PropagateRequestCancellation: true,
		EventStore:                   mcp.NewMemoryEventStore(nil),
	})
	stateless := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Logger:                       sdkLogger(s.log),
		Stateless:                    true,
		PropagateRequestCancellation: true,
	})
	retry := []byte("retry: " + strconv.FormatInt(DefaultSSERetry.Milliseconds(), 10) + "\n")
	timeout := s.opts.HTTPSessionTimeout
	if timeout <= 0 {
		timeout = DefaultHTTPSessionTimeout
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Protocol-Version") >= rev20260728 {
			if s.serveStatelessCall(w, r) || s.serveTaskExt(w, r) {
				return
			}
			stateless.ServeHTTP(w, r)
			return
		}
		s.sessionRevision(r)
		id := r.Header.Get("Mcp-Session-Id")
		if id != "" && r.Method == http.MethodPost {
			s.idle.start(id)
			defer s.idle.end(id, timeout)
		}
		if s.servePost(w, r) || s.resumeFastStream(w, r) {
			return
		}
		sessions.ServeHTTP(&primingWriter{ResponseWriter: w, retry: retry}, r)
		if id == "" && r.Method == http.MethodPost {
			if made := w.Header().Get("Mcp-Session-Id"); made != "" {
				s.idle.track(made, timeout, s.expireSession) // initialize made a session
			}
		}
	})
}

// sessionRevision makes a request of a session on 2025-11-25 or later that names an older
// revision in its MCP-Protocol-Version header be served as its session's revision. The
// go-sdk decides from the header whether a stream gets its priming event; the revision a
// session negotiated is the one its client speaks (the spec has the client send it in
// every request), so a header naming an older one would only take resumability away.
func (s *Server) sessionRevision(r *http.Request) {
	id := r.Header.Get("Mcp-Session-Id")
	header := r.Header.Get("Mcp-Protocol-Version")
	if id == "" || header == "" || header >= rev20251125 {
		return
	}
	for ss := range s.mcp.Sessions() {
		if ss.ID() != id {
			continue
		}
		if p := ss.InitializeParams(); p != nil && p.ProtocolVersion >= rev20251125 && p.ProtocolVersion < rev20260728 {
			r.Header.Set("Mcp-Protocol-Version", p.ProtocolVersion)
		}
		return
	}
}

// primingWriter adds the retry field to the go-sdk's priming event, which it writes
// without one (as the first write of a stream, in one piece: "event: prime\nid: …\ndata: \n\n").
type primingWriter struct {
	http.ResponseWriter
	retry  []byte
	primed bool
}

var primeEvent = []byte("event: prime\n")

func (p *primingWriter) Write(b []byte) (int, error) {
	if p.primed || !bytes.HasPrefix(b, primeEvent) {
		p.primed = true
		return p.ResponseWriter.Write(b)
	}
	p.primed = true
	i := bytes.Index(b, []byte("data: "))
	if i < 0 {
		return p.ResponseWriter.Write(b)
	}
	out := make([]byte, 0, len(b)+len(p.retry))
	out = append(append(append(out, b[:i]...), p.retry...), b[i:]...)
	if _, err := p.ResponseWriter.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}

// Unwrap lets http.ResponseController reach the connection's Flush.
func (p *primingWriter) Unwrap() http.ResponseWriter { return p.ResponseWriter }

// maxTaskBody bounds the body read to look for a task message or a fast call; a larger
// one goes to the go-sdk untouched (a tools/call carrying that much is never a task
// message of jean2's making, and the go-sdk has its own limits).
const maxTaskBody = 4 << 20

// servePost answers a POST of a session that carries one task message (tasks.go) or a
// tools/call for the fast path (httpfast.go), and reports whether it did; anything else is
// left to the go-sdk with its body intact (after notePost has seen it).
func (s *Server) servePost(w http.ResponseWriter, r *http.Request) bool {
	id := r.Header.Get("Mcp-Session-Id")
	if r.Method != http.MethodPost || id == "" || r.Body == nil {
		return false
	}
	if rebound(r) {
		return false // the go-sdk refuses it (DNS rebinding protection)
	}
	if !jsonContent(r) {
		return false // the go-sdk refuses it (415)
	}
	body, ok := peekBody(r)
	if !ok {
		return false
	}
	if (bytes.Contains(body, []byte(`"tasks/`)) || bytes.Contains(body, []byte(`"task"`))) && s.serveTask(w, r, id, body) {
		return true
	}
	if bytes.Contains(body, []byte(`"tools/call"`)) && s.serveFastCall(w, r, id, body) {
		return true
	}
	s.notePost(id, body)
	return false
}

// jsonContent reports whether a request's Content-Type is application/json, which the
// go-sdk requires of a POST (415 otherwise).
func jsonContent(r *http.Request) bool {
	ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
	return strings.EqualFold(strings.TrimSpace(ct), "application/json")
}

// peekBody reads a POST's body (up to maxTaskBody) and puts it back as it was read, for the
// go-sdk to read again when the request is its; false when it is larger or the read failed
// (what was read is then handed on before the rest). Sized by Content-Length when the
// client sent one, so a call costs one allocation more than the go-sdk's own.
func peekBody(r *http.Request) ([]byte, bool) {
	if r.ContentLength > maxTaskBody {
		return nil, false
	}
	var body []byte
	var err error
	if r.ContentLength >= 0 {
		body = make([]byte, r.ContentLength)
		_, err = io.ReadFull(r.Body, body)
	} else {
		body, err = io.ReadAll(io.LimitReader(r.Body, maxTaskBody+1))
	}
	if err != nil || len(body) > maxTaskBody {
		rest := r.Body
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), rest), rest}
		return nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, true
}

// serveTask answers a session's POSTed task message and reports whether it did.
func (s *Server) serveTask(w http.ResponseWriter, r *http.Request, id string, body []byte) bool {
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		return false
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !isTaskMessage(req) {
		return false
	}
	ss := s.findSession(id)
	if !offersTasks(ss) {
		return false // an unknown session (the go-sdk answers 404), or a client not offered tasks
	}
	res, err := s.taskRequest(r.Context(), ss, req)
	resp := &jsonrpc.Response{ID: req.ID, Error: err}
	if err == nil {
		if resp.Result, err = json.Marshal(res); err != nil {
			resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("%s: encoding the result: %v", req.Method, err)}
		}
	}
	out, err := jsonrpc.EncodeMessage(resp)
	if err != nil {
		http.Error(w, fmt.Sprintf("%s: encoding the answer: %v", req.Method, err), http.StatusInternalServerError)
		return true
	}
	writeJSON(w, id, out)
	return true
}

// rebound reports a request that came through a loopback address with a Host header naming
// another host, which the go-sdk's handler refuses (DNS rebinding protection): answered
// beside it, task messages must be refused the same way.
func rebound(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && local != nil && isLoopback(local.String()) && !isLoopback(r.Host)
}

// isLoopback reports whether a host or host:port names the loopback interface.
func isLoopback(addr string) bool {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

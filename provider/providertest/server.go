// Package providertest is TEST SUPPORT ONLY: fake model servers for tests, never used by
// jean2 itself. It imports package testing, so a product binary that linked it would show.
//
// NewOpenAI serves POST /v1/chat/completions and NewAnthropic serves POST /v1/messages on
// 127.0.0.1, answering with scripted replies written byte for byte the way the real APIs
// stream them: OpenAI's "data: {chat.completion.chunk}" lines with tool-call deltas by
// index and a final "data: [DONE]"; Anthropic's named events message_start,
// content_block_start, content_block_delta (text_delta, input_json_delta),
// content_block_stop, message_delta and message_stop. Replies can also fail the way real
// servers fail: an HTTP error with the real error body and Retry-After, an error event in
// the middle of the stream, a connection cut off mid-stream.
//
// A test scripts replies with Push (first in, first out) or computes them with Respond,
// points a provider at BaseURL, and checks what was sent with Requests:
//
//	srv := providertest.NewOpenAI(t)
//	srv.Push(providertest.NewOpenAIStream("gpt-test").
//		ToolCall(0, "call_1", "read_file", "").ToolArgs(0, `{"pa`).ToolArgs(0, `th":"a.txt"}`).
//		Finish("tool_calls").Usage(12, 7).Done().Reply())
//	p, _ := provider.NewOpenAI(provider.Config{Name: "fake", Kind: provider.KindOpenAI, BaseURL: srv.BaseURL(), APIKey: "k"}, nil)
package providertest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Flavor is the API a fake server speaks.
type Flavor int

// Flavors.
const (
	OpenAI Flavor = iota
	Anthropic
)

// Server is a fake model server on 127.0.0.1. Safe for concurrent use.
type Server struct {
	// URL is the server's root, e.g. http://127.0.0.1:41234.
	URL string
	// Key, when set, must come with every request (Authorization: Bearer <key> for OpenAI,
	// x-api-key for Anthropic); a request without it gets the real 401 error.
	Key string

	// ModelList, when set, is the body GET /v1/models answers (the key checked as for
	// completions); unset, that path is a 404 as other unknown paths are.
	ModelList string

	flavor Flavor
	t      testing.TB
	srv    *httptest.Server

	mu       sync.Mutex
	replies  []Reply
	respond  func(Request) Reply
	requests []Request
}

// Request is a request the server received.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// Decode reads the request's JSON body into v.
func (r Request) Decode(v any) error { return json.Unmarshal(r.Body, v) }

// NewOpenAI starts a fake OpenAI chat-completions server, closed when t ends.
func NewOpenAI(t testing.TB) *Server { return start(t, OpenAI) }

// NewAnthropic starts a fake Anthropic Messages server, closed when t ends.
func NewAnthropic(t testing.TB) *Server { return start(t, Anthropic) }

func start(t testing.TB, f Flavor) *Server {
	t.Helper()
	s := &Server{flavor: f, t: t}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(s.Close)
	return s
}

// BaseURL is what a provider's Config.BaseURL should be: URL/v1 for OpenAI (the API paths
// hang from /v1), URL for Anthropic (the SDK adds /v1/messages).
func (s *Server) BaseURL() string {
	if s.flavor == OpenAI {
		return s.URL + "/v1"
	}
	return s.URL
}

// Push queues replies, answered in order, one per request.
func (s *Server) Push(replies ...Reply) {
	s.mu.Lock()
	s.replies = append(s.replies, replies...)
	s.mu.Unlock()
}

// Respond sets the function that answers requests once the queue is empty; it is called
// on the server's goroutine.
func (s *Server) Respond(fn func(Request) Reply) {
	s.mu.Lock()
	s.respond = fn
	s.mu.Unlock()
}

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Pending is how many pushed replies are still waiting for a request.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.replies)
}

// Close stops the server, cutting any stream still open.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()

	if r.Method == http.MethodGet && r.URL.Path == "/v1/models" {
		s.mu.Lock()
		list := s.ModelList
		s.mu.Unlock()
		if list != "" {
			if reply, bad := s.checkKey(req); bad {
				reply.Write(w, r.Context().Done())
				return
			}
			Reply{Body: list}.Write(w, r.Context().Done())
			return
		}
	}
	if reply, bad := s.check(req); bad {
		reply.Write(w, r.Context().Done())
		return
	}
	s.mu.Lock()
	var reply Reply
	var ok bool
	if len(s.replies) > 0 {
		reply, s.replies, ok = s.replies[0], s.replies[1:], true
	} else if s.respond != nil {
		fn := s.respond
		s.mu.Unlock()
		reply, ok = fn(req), true
		s.mu.Lock()
	}
	s.mu.Unlock()
	if !ok {
		s.t.Errorf("providertest: %s %s arrived with no reply scripted", req.Method, req.Path)
		s.apiError(http.StatusInternalServerError, "server_error", "providertest: no reply scripted for this request").Write(w, r.Context().Done())
		return
	}
	reply.Write(w, r.Context().Done())
}

// check refuses what the real API would refuse before answering: a wrong method or path,
// a missing key, a body that is not a JSON object, a request that is not for a stream.
func (s *Server) check(r Request) (Reply, bool) {
	path := "/v1/chat/completions"
	if s.flavor == Anthropic {
		path = "/v1/messages"
	}
	if r.Method != http.MethodPost || r.Path != path {
		return s.apiError(http.StatusNotFound, "not_found_error", fmt.Sprintf("Unknown request URL: %s %s", r.Method, r.Path)), true
	}
	if reply, bad := s.checkKey(r); bad {
		return reply, true
	}
	if s.flavor == Anthropic && r.Header.Get("Anthropic-Version") == "" {
		return s.apiError(http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required"), true
	}
	var body map[string]any
	if err := json.Unmarshal(r.Body, &body); err != nil {
		return s.apiError(http.StatusBadRequest, "invalid_request_error", "The request body is not valid JSON: "+err.Error()), true
	}
	if body["stream"] != true {
		return s.apiError(http.StatusBadRequest, "invalid_request_error", "providertest serves streaming requests only"), true
	}
	if _, ok := body["model"].(string); !ok {
		return s.apiError(http.StatusBadRequest, "invalid_request_error", "model: Field required"), true
	}
	if s.flavor == Anthropic {
		if _, ok := body["max_tokens"].(float64); !ok {
			return s.apiError(http.StatusBadRequest, "invalid_request_error", "max_tokens: Field required"), true
		}
	}
	return Reply{}, false
}

// checkKey refuses a request without the server's key, as the real APIs do.
func (s *Server) checkKey(r Request) (Reply, bool) {
	if s.Key != "" {
		got := r.Header.Get("X-Api-Key")
		if s.flavor == OpenAI {
			got = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		}
		if got != s.Key {
			return s.apiError(http.StatusUnauthorized, "authentication_error", "Incorrect API key provided."), true
		}
	}
	return Reply{}, false
}

func (s *Server) apiError(status int, typ, msg string) Reply {
	if s.flavor == Anthropic {
		return AnthropicError(status, typ, msg)
	}
	return OpenAIError(status, typ, msg)
}

// Write writes the reply as the server would: its status, headers and body, or its stream
// step by step (done: the client went away, so the pauses end). A fake of one's own (an
// http.Handler choosing its replies) writes them with it.
func (r Reply) Write(w http.ResponseWriter, done <-chan struct{}) {
	for k, vs := range r.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	status := r.Status
	if status == 0 {
		status = http.StatusOK
	}
	if len(r.Steps) == 0 {
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, r.Body)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(status)
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	for _, st := range r.Steps {
		if st.Delay > 0 {
			t := time.NewTimer(st.Delay)
			select {
			case <-t.C:
			case <-done: // the client went away
				t.Stop()
				return
			}
		}
		if st.Drop {
			// Abort the response: the connection closes without the chunked body's end, as
			// when a server or a proxy dies mid-stream.
			panic(http.ErrAbortHandler)
		}
		if _, err := io.WriteString(w, st.Raw); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
}

// Reply is one scripted answer: a plain body (Steps empty), or an event stream (Steps).
type Reply struct {
	Status int // 0 means 200
	Header http.Header
	Body   string
	Steps  []Step
}

// WithHeader returns r with a response header added, e.g. Retry-After.
func (r Reply) WithHeader(key, value string) Reply {
	h := r.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Add(key, value)
	r.Header = h
	return r
}

// Step is one write of a stream.
type Step struct {
	Raw   string        // bytes written as they are, then flushed
	Delay time.Duration // a pause before the write
	Drop  bool          // cut the connection here instead of writing
}

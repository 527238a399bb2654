package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jean2/jean2/tool"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The fast path for stateless tools/call (revision 2026-07-28).
//
// The go-sdk serves a stateless request by making a session for it (a server session, its
// transport, its connection and goroutines, its event stream), most of such a call's cost.
// A stateless tools/call whose answer is all that can go back is answered here instead,
// with the tool's handler called as the session path would call it but with no session
// (call.go takes a nil session as a stateless one):
//
//   - one request (not a batch), tools/call of a listed tool, with an id and params; no
//     task, no progress token, not a multi-round-trip retry (requestState, inputResponses);
//   - the request's _meta names the same revision (2026-07-28) as its
//     MCP-Protocol-Version header, carries clientCapabilities that declare neither
//     elicitation nor sampling (so no model call becomes a sampling request, and no ask an
//     input request but a roots one, which the answer carries as any other round's), a
//     clientInfo that decodes if there is one, and no logLevel (so no log goes back);
//   - the headers are ones the go-sdk takes (Content-Type, Accept naming both types, no DNS
//     rebinding, Mcp-Method and Mcp-Name naming the call), and none binds an argument
//     (Mcp-Param-*, x-mcp-header in the tool's schema: SEP-2243), which the go-sdk checks.
//
// The answer is JSON when the call ends within FastJSONWait, else an SSE stream with one
// event (a stateless stream is not resumable: there is no session to resume it in), its
// headers written with the answer; an error the spec answers with 400 (invalid params, a
// missing client capability: SEP-2575) is JSON with that status however long it took. A
// client that drops the request cancels the call, as the go-sdk's PropagateRequestCancellation
// does. Everything else is the go-sdk's, with the body as it was sent.

// serveStatelessCall answers a stateless POST on the fast path when it fits, and reports
// whether it did.
func (s *Server) serveStatelessCall(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodPost || r.Body == nil || rebound(r) || !jsonContent(r) || !acceptsBoth(r.Header.Values("Accept")) ||
		r.Header.Get("Mcp-Method") != "tools/call" {
		return false
	}
	for k := range r.Header {
		if strings.HasPrefix(k, "Mcp-Param-") {
			return false // the go-sdk checks them against the arguments (SEP-2243)
		}
	}
	body, ok := peekBody(r)
	if !ok || !bytes.Contains(body, []byte(`"tools/call"`)) {
		return false
	}
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		return false
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != "tools/call" || !req.ID.IsValid() || len(req.Params) == 0 {
		return false
	}
	var raw callParams
	if json.Unmarshal(req.Params, &raw) != nil || raw == nil {
		return false
	}
	for _, k := range []string{"task", "requestState", "inputResponses"} {
		if _, ok := raw[k]; ok {
			return false
		}
	}
	params := &mcp.CallToolParamsRaw{}
	if json.Unmarshal(raw["name"], &params.Name) != nil || json.Unmarshal(raw["_meta"], &params.Meta) != nil {
		return false
	}
	if !statelessMetaFits(params.Meta, r.Header.Get("Mcp-Protocol-Version")) || params.GetProgressToken() != nil ||
		r.Header.Get("Mcp-Name") != params.Name {
		return false
	}
	if a, ok := raw["arguments"]; ok && !bytes.Equal(bytes.TrimSpace(a), []byte("null")) {
		params.Arguments = a
	}
	h := s.toolHandler(params.Name)
	if h == nil || s.bindsHeaders(params.Name) || s.taskSupport(params.Name) != tool.TaskForbidden {
		return false // an unknown tool (the go-sdk's error), one whose arguments travel in headers too, or one that may run as a task (taskext.go)
	}

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	done := make(chan statelessAnswer, 1)
	s.calls.Add(1)
	go func() {
		defer s.calls.Done()
		res, err := h(ctx, &mcp.CallToolRequest{Params: params})
		if err == nil && res == nil {
			err = fmt.Errorf("tool %s: the handler returned no result", params.Name)
		}
		resultType := "complete"
		if err == nil {
			if res.Content == nil && res.InputRequests == nil {
				res.Content = []mcp.Content{} // as the go-sdk: [] rather than null
			}
			if res.InputRequests != nil {
				resultType = "input_required"
			}
			// As the go-sdk annotates every result of the new protocol (SEP-2575).
			if res.Meta == nil {
				res.Meta = mcp.Meta{}
			}
			if _, ok := res.Meta[mcp.MetaKeyServerInfo]; !ok {
				res.Meta[mcp.MetaKeyServerInfo] = s.impl
			}
		}
		done <- statelessAnswer{encodeCallResponse(req.ID, res, err, resultType), errorStatus(err)}
	}()

	return s.writeStatelessAnswer(w, r, done, cancel)
}

// writeStatelessAnswer writes a fast call's answer: JSON when it came within FastJSONWait,
// else as one SSE event; an error with a status of its own (400) as JSON either way.
func (s *Server) writeStatelessAnswer(w http.ResponseWriter, r *http.Request, done <-chan statelessAnswer, cancel context.CancelFunc) bool {
	wait := s.opts.FastJSONWait
	if wait == 0 {
		wait = DefaultFastJSONWait
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case a := <-done:
		s.countStateless(0)
		a.write(w)
		return true
	case <-s.done:
		cancel() // Close: the call ends, and its answer says so
		s.countStateless(0)
		(<-done).write(w)
		return true
	case <-timer.C:
	}
	s.countStateless(1)
	// Nothing is written until the answer, as the go-sdk writes a request's stream: an
	// error the spec gives a status of its own (400, SEP-2575) can still have it.
	var a statelessAnswer
	select {
	case a = <-done:
	case <-s.done:
		cancel()
		a = <-done
	case <-r.Context().Done():
		return true // the client dropped the request: the caller's deferred cancel ends the call
	}
	if a.status != 0 {
		a.write(w)
		return true
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache, no-transform")
	w.WriteHeader(http.StatusOK)
	_ = writeEvent(w, "event: message\ndata: "+string(a.out)+"\n\n")
	return true
}

// statelessAnswer is a fast call's encoded answer and the HTTP status it goes back with.
type statelessAnswer struct {
	out    []byte
	status int
}

func (a statelessAnswer) write(w http.ResponseWriter) {
	if a.status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(a.out)))
		w.WriteHeader(a.status)
		_, _ = w.Write(a.out)
		return
	}
	writeJSON(w, "", a.out)
}

// errorStatus is the HTTP status of a stateless answer that is an error, as the go-sdk
// gives it (SEP-2575): 400 for invalid params and a missing client capability; 0 (200)
// otherwise. An answer already streaming as SSE keeps its 200.
func errorStatus(err error) int {
	var jerr *jsonrpc.Error
	if errors.As(err, &jerr) && (jerr.Code == jsonrpc.CodeInvalidParams || jerr.Code == mcp.CodeMissingRequiredClientCapabilities) {
		return http.StatusBadRequest
	}
	return 0
}

// statelessMetaFits reports whether a request's _meta is one the fast path may answer (see
// the top of this file); anything else, valid or not, the go-sdk judges.
func statelessMetaFits(meta mcp.Meta, header string) bool {
	version, _ := meta[mcp.MetaKeyProtocolVersion].(string)
	// The one stateless revision the go-sdk speaks; a later one is its to refuse.
	if version != rev20260728 || version != header {
		return false
	}
	if _, ok := meta[mcp.MetaKeyLogLevel]; ok {
		return false
	}
	if info, ok := meta[mcp.MetaKeyClientInfo]; ok {
		if _, isObject := info.(map[string]any); !isObject {
			return false
		}
	}
	caps, ok := meta[mcp.MetaKeyClientCapabilities].(map[string]any)
	if !ok {
		return false
	}
	_, elicit := caps["elicitation"]
	_, sampling := caps["sampling"]
	return !elicit && !sampling
}

// bindsHeaders reports whether a listed tool's input schema binds arguments to headers
// (x-mcp-header), which the go-sdk checks against the request's Mcp-Param-* headers.
func (s *Server) bindsHeaders(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Contains(s.listed[name], `"x-mcp-header"`)
}

// countStateless counts a stateless fast call answered as JSON (0) or over SSE (1).
func (s *Server) countStateless(i int) {
	s.httpFast.mu.Lock()
	s.httpFast.stateless[i]++
	s.httpFast.mu.Unlock()
}

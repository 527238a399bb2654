package soak

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jean2/jean2/provider/providertest"
)

// fakeModel answers OpenAI chat completions with providertest's streams, written byte for
// byte as the real API writes them. It keeps nothing of the requests (providertest.Server
// keeps them all, which over a long soak is gigabytes in this process).
//
// With refuseAbove > 0 it is a model whose window jean2 does not know: a request of more
// than refuseAbove tokens (its body's bytes / 4, as the model counts them, not as jean2
// estimates) is refused with OpenAI's 400 context_length_exceeded, as every real provider
// refuses a request past its window.
type fakeModel struct {
	url         string
	kb          int
	refuseAbove int
	calls       atomic.Int64
	refusals    atomic.Int64 // requests refused as too long
	summaries   atomic.Int64 // compactions' summary requests answered
	maxPrompt   atomic.Int64 // the largest request answered since it was last taken, in tokens
}

func newFakeModel(t *testing.T, kb, refuseAbove int) *fakeModel {
	m := &fakeModel{kb: kb, refuseAbove: refuseAbove}
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	m.url = srv.URL + "/v1"
	return m
}

// chatRequest is what the fake reads of a request.
type chatRequest struct {
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

func (m *fakeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	var req chatRequest
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil || len(req.Messages) == 0 || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, fmt.Sprintf(`{"error":{"message":"soak model: bad request %s: %v","type":"invalid_request_error"}}`, r.URL.Path, err), http.StatusBadRequest)
		return
	}
	prompt := int64(len(body) / 4)
	if m.refuseAbove > 0 && prompt > int64(m.refuseAbove) {
		m.refusals.Add(1)
		providertest.OpenAIContextExceeded(m.refuseAbove, int(prompt)).Write(w, r.Context().Done())
		return
	}
	for old := m.maxPrompt.Load(); prompt > old && !m.maxPrompt.CompareAndSwap(old, prompt); old = m.maxPrompt.Load() {
	}
	system := ""
	if req.Messages[0].Role == "system" {
		system = string(req.Messages[0].Content)
	}
	last := req.Messages[len(req.Messages)-1]
	var reply providertest.Reply
	switch {
	case strings.Contains(system, "You summarize a conversation"):
		m.summaries.Add(1)
		reply = providertest.NewOpenAIStream("soak-model").Text("The person asked for blobs, turn after turn; each call of blob returned text. Nothing else is pending.").
			Finish("stop").Usage(prompt, 30).Done().Reply()
	case strings.Contains(system, "You name conversations"):
		reply = providertest.NewOpenAIStream("soak-model").Text("Soak").Finish("stop").Usage(prompt, 2).Done().Reply()
	case last.Role == "tool":
		reply = providertest.NewOpenAIStream("soak-model").Text("The blob ").Text("came back; ").Text("done.").
			Finish("stop").Usage(prompt, 8).Done().Reply()
	default:
		n := m.calls.Add(1)
		args := fmt.Sprintf(`{"kb":%d,"n":%d}`, m.kb, n)
		reply = providertest.NewOpenAIStream("soak-model").Text("Calling blob.").
			ToolCall(0, fmt.Sprintf("call_%d", n), "blob", "").ToolArgs(0, args[:5]).ToolArgs(0, args[5:]).
			Finish("tool_calls").Usage(prompt, 20).Done().Reply()
	}
	reply.Write(w, r.Context().Done())
}

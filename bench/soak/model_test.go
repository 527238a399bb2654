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
type fakeModel struct {
	url   string
	kb    int
	calls atomic.Int64
}

func newFakeModel(t *testing.T, kb int) *fakeModel {
	m := &fakeModel{kb: kb}
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
	system := ""
	if req.Messages[0].Role == "system" {
		system = string(req.Messages[0].Content)
	}
	last := req.Messages[len(req.Messages)-1]
	var reply providertest.Reply
	switch {
	case strings.Contains(system, "You summarize a conversation"):
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
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	for _, st := range reply.Steps {
		if _, err := io.WriteString(w, st.Raw); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
}

package providertest

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

func post(t *testing.T, url, body string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// TestOpenAIWire checks the bytes: every event a "data: " line of a chat.completion.chunk
// followed by a blank line, and "data: [DONE]" last.
func TestOpenAIWire(t *testing.T) {
	s := NewOpenAI(t)
	s.Push(NewOpenAIStream("gpt-x").Text("hi").ToolCall(0, "call_1", "t", "").ToolArgs(0, "{}").Finish("tool_calls").Usage(1, 2).Done().Reply())
	res, body := post(t, s.BaseURL()+"/chat/completions", `{"model":"gpt-x","stream":true,"messages":[]}`, nil)
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, type %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	events := strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n")
	if events[len(events)-1] != "data: [DONE]" || len(events) != 7 {
		t.Fatalf("%d events, last %q", len(events), events[len(events)-1])
	}
	for _, ev := range events[:len(events)-1] {
		data, ok := strings.CutPrefix(ev, "data: ")
		var chunk struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta map[string]any `json:"delta"`
			} `json:"choices"`
		}
		if !ok || strings.Contains(data, "\n") || json.Unmarshal([]byte(data), &chunk) != nil || chunk.Object != "chat.completion.chunk" {
			t.Fatalf("not a chunk line: %q", ev)
		}
	}
}

func TestAnthropicWire(t *testing.T) {
	s := NewAnthropic(t)
	s.Key = "k"
	s.Push(AnthropicToolUse("claude-x", "toolu_1", "t", `{"a":`, `1}`))
	res, body := post(t, s.BaseURL()+"/v1/messages", `{"model":"claude-x","max_tokens":10,"stream":true,"messages":[]}`,
		map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01"})
	if res.StatusCode != 200 {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	sc := bufio.NewScanner(strings.NewReader(body))
	var names []string
	for sc.Scan() {
		line := sc.Text()
		name, ok := strings.CutPrefix(line, "event: ")
		if !ok {
			t.Fatalf("expected an event line, got %q", line)
		}
		sc.Scan()
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		var v struct{ Type string }
		if !ok || json.Unmarshal([]byte(data), &v) != nil || v.Type != name {
			t.Fatalf("event %s with data %q", name, sc.Text())
		}
		sc.Scan()
		if sc.Text() != "" {
			t.Fatalf("no blank line after event %s", name)
		}
		names = append(names, name)
	}
	want := "message_start ping content_block_start content_block_delta content_block_delta content_block_stop message_delta message_stop"
	if strings.Join(names, " ") != want {
		t.Fatalf("events %v", names)
	}
}

func TestServerRefusesLikeTheRealAPIs(t *testing.T) {
	a := NewAnthropic(t)
	a.Key = "k"
	o := NewOpenAI(t)
	o.Key = "k"
	for name, c := range map[string]struct {
		url, body string
		header    map[string]string
		status    int
		errType   string
	}{
		"openai wrong path":   {o.URL + "/v1/completions", `{}`, nil, 404, "not_found_error"},
		"openai no key":       {o.BaseURL() + "/chat/completions", `{"model":"m","stream":true}`, nil, 401, "authentication_error"},
		"openai not a stream": {o.BaseURL() + "/chat/completions", `{"model":"m"}`, map[string]string{"Authorization": "Bearer k"}, 400, "invalid_request_error"},
		"anthropic no version": {a.URL + "/v1/messages", `{"model":"m","stream":true,"max_tokens":1}`,
			map[string]string{"x-api-key": "k"}, 400, "invalid_request_error"},
		"anthropic no max_tokens": {a.URL + "/v1/messages", `{"model":"m","stream":true}`,
			map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01"}, 400, "invalid_request_error"},
	} {
		res, body := post(t, c.url, c.body, c.header)
		var e struct {
			Error struct{ Type, Message string } `json:"error"`
		}
		if res.StatusCode != c.status || json.Unmarshal([]byte(body), &e) != nil || e.Error.Type != c.errType || e.Error.Message == "" {
			t.Errorf("%s: %d %s", name, res.StatusCode, body)
		}
	}
	if len(o.Requests()) != 3 || len(a.Requests()) != 2 {
		t.Fatalf("recorded %d and %d requests", len(o.Requests()), len(a.Requests()))
	}
}

// TestRespond answers by looking at the request, as a harness test does to play a turn.
func TestRespond(t *testing.T) {
	s := NewOpenAI(t)
	s.Push(OpenAIText("m", "queued first"))
	s.Respond(func(r Request) Reply {
		var body struct {
			Messages []struct{ Role string } `json:"messages"`
		}
		_ = r.Decode(&body)
		if last := body.Messages[len(body.Messages)-1]; last.Role == "tool" {
			return OpenAIText("m", "after the tool")
		}
		return OpenAIToolCall("m", "call_1", "t", "{}")
	})
	_, first := post(t, s.BaseURL()+"/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user"}]}`, nil)
	_, second := post(t, s.BaseURL()+"/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user"}]}`, nil)
	_, third := post(t, s.BaseURL()+"/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user"},{"role":"tool"}]}`, nil)
	if !strings.Contains(first, "queued first") || !strings.Contains(second, `"name":"t"`) || !strings.Contains(third, "after the tool") {
		t.Fatalf("replies:\n%s\n%s\n%s", first, second, third)
	}
	if s.Pending() != 0 {
		t.Fatal("the queue was not used first")
	}
}

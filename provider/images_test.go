package provider_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/provider"
)

// pngBytes is the smallest PNG header a test needs: the providers do not look further.
var pngBytes = []byte("\x89PNG\r\n\x1a\nIHDR")

// toolImageTurn is a round whose tool result carried an image.
func toolImageTurn() provider.Request {
	return provider.Request{Model: "m", MaxTokens: 10, Messages: []provider.Message{
		{Role: provider.RoleUser, Text: "draw it"},
		{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: "c1", Name: "chart", Args: `{}`}, {ID: "c2", Name: "chart", Args: `{}`}}},
		{Role: provider.RoleTool, ToolCallID: "c1", Text: "a chart", Images: []provider.Image{{MediaType: "image/png", Data: pngBytes}}},
		{Role: provider.RoleTool, ToolCallID: "c2", Text: "no chart"},
		{Role: provider.RoleUser, Text: "thanks"},
	}}
}

func sendWith(t *testing.T, f flavor, noImages bool, req provider.Request) map[string]any {
	t.Helper()
	srv := f.srv(t)
	srv.Key = testKey
	p, err := provider.New(provider.Config{Name: "fake-" + f.name, Kind: f.kind, BaseURL: srv.BaseURL(), APIKey: testKey, NoImages: noImages},
		&provider.Options{Retry: provider.Retry{BaseDelay: time.Millisecond, MaxDelay: 4 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	srv.Push(f.text("ok"))
	s, err := p.Stream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provider.Collect(s); err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := srv.Requests()[0].Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// A tool result's image reaches Anthropic as an image block inside the tool_result, in the
// Messages API's own format (issue 25, point 2).
func TestToolResultImageAnthropic(t *testing.T) {
	body := sendWith(t, flavorNamed(t, "anthropic"), false, toolImageTurn())
	msgs := body["messages"].([]any)
	results := msgs[2].(map[string]any)["content"].([]any)
	first := jsonOf(t, results[0])
	want := `{"content":[{"text":"a chart","type":"text"},{"source":{"data":"` + base64.StdEncoding.EncodeToString(pngBytes) +
		`","media_type":"image/png","type":"base64"},"type":"image"}],"is_error":false,"tool_use_id":"c1","type":"tool_result"}`
	if first != want {
		t.Fatalf("tool_result with an image:\n got %s\nwant %s", first, want)
	}
	if second := jsonOf(t, results[1]); strings.Contains(second, "image") {
		t.Fatalf("the image went to the other result too: %s", second)
	}
}

// Chat completions take text only in a tool message: the image follows the run of tool
// messages in a user message that names the call, and the result's text says so.
func TestToolResultImageOpenAI(t *testing.T) {
	body := sendWith(t, flavorNamed(t, "openai"), false, toolImageTurn())
	msgs := body["messages"].([]any)
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m.(map[string]any)["role"].(string))
	}
	if got := strings.Join(roles, ","); got != "user,assistant,tool,tool,user,user" {
		t.Fatalf("roles = %s", got)
	}
	if c := msgs[2].(map[string]any)["content"]; c != "a chart\n[image/png 12 B: in the user message after the tool results]" {
		t.Fatalf("tool message = %q", c)
	}
	want := `[{"text":"The images of the result of tool call c1:","type":"text"},{"image_url":{"url":"data:image/png;base64,` +
		base64.StdEncoding.EncodeToString(pngBytes) + `"},"type":"image_url"}]`
	if got := jsonOf(t, msgs[4].(map[string]any)["content"]); got != want {
		t.Fatalf("images message:\n got %s\nwant %s", got, want)
	}
}

// A model configured to take no images (noImages) gets a line saying what each was, from
// either provider, and no image part at all.
func TestNoImagesStandIn(t *testing.T) {
	for _, name := range []string{"anthropic", "openai"} {
		req := toolImageTurn()
		req.Messages[0].Images = []provider.Image{{MediaType: "image/jpeg", Data: make([]byte, 34_000)}}
		raw := jsonOf(t, sendWith(t, flavorNamed(t, name), true, req))
		if strings.Contains(raw, "base64") || strings.Contains(raw, "image_url") {
			t.Fatalf("%s: an image was sent to a model that takes none: %s", name, raw)
		}
		for _, want := range []string{"[image/png 12 B: not shown to this model]", "[image/jpeg 34 KB: not shown to this model]"} {
			if !strings.Contains(raw, want) {
				t.Fatalf("%s: no stand-in %q in %s", name, want, raw)
			}
		}
	}
}

func flavorNamed(t *testing.T, name string) flavor {
	for _, f := range flavors() {
		if f.name == name {
			return f
		}
	}
	t.Fatalf("no flavor %s", name)
	return flavor{}
}

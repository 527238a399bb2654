package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/tool"
)

func TestForToolsGenerateText(t *testing.T) {
	for _, f := range flavors() {
		t.Run(f.name, func(t *testing.T) {
			srv, p := f.start(t, nil)
			srv.Push(f.text("A short ", "summary."), f.text("other model"))
			l := provider.ForTools(p, f.model())
			got, err := l.GenerateText(context.Background(), tool.TextRequest{Prompt: "Summarize: x", System: "You are concise.", MaxTokens: 64})
			if err != nil || got != "A short summary." {
				t.Fatalf("GenerateText = %q, %v", got, err)
			}
			var body struct {
				Model     string `json:"model"`
				MaxTokens int    `json:"max_tokens"`
				Tools     []any  `json:"tools"`
			}
			_ = srv.Requests()[0].Decode(&body)
			if body.Model != f.model() || body.MaxTokens != 64 || len(body.Tools) != 0 {
				t.Fatalf("request %+v", body)
			}
			if !strings.Contains(string(srv.Requests()[0].Body), "You are concise.") || !strings.Contains(string(srv.Requests()[0].Body), "Summarize: x") {
				t.Fatalf("the system text or prompt was not sent: %s", srv.Requests()[0].Body)
			}
			// A tool may ask for another model of the session's provider.
			if _, err := l.GenerateText(context.Background(), tool.TextRequest{Prompt: "x", Model: "small-model"}); err != nil {
				t.Fatal(err)
			}
			_ = srv.Requests()[1].Decode(&body)
			if body.Model != "small-model" {
				t.Fatalf("model %q, want the request's", body.Model)
			}
		})
	}
}

func TestForToolsGenerateStructuredRepairsOnce(t *testing.T) {
	for _, f := range flavors() {
		t.Run(f.name, func(t *testing.T) {
			srv, p := f.start(t, nil)
			srv.Push(f.text(`{"summary": 42}`), f.text("```json\n", `{"summary": "fine"}`, "\n```"))
			l := provider.ForTools(p, f.model())
			got, err := l.GenerateStructured(context.Background(), tool.StructuredRequest{
				TextRequest: tool.TextRequest{Prompt: "Summarize"},
				Schema:      json.RawMessage(`{"type":"object","properties":{"summary":{"type":"string"}},"required":["summary"]}`),
			})
			if err != nil || string(got) != `{"summary":"fine"}` {
				t.Fatalf("GenerateStructured = %s, %v", got, err)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), "rejected") {
				t.Fatalf("%d requests; the second should be the repair", len(reqs))
			}
		})
	}
}

func TestForToolsErrors(t *testing.T) {
	if _, err := provider.ForTools(nil, "m").GenerateText(context.Background(), tool.TextRequest{Prompt: "x"}); !errors.Is(err, tool.ErrNoLLM) {
		t.Fatalf("no provider: %v", err)
	}
	f := flavors()[0]
	srv, p := f.start(t, nil)
	l := provider.ForTools(p, "m")
	srv.Push(f.httpError(400, "invalid_request_error", "bad model"))
	_, err := l.GenerateText(context.Background(), tool.TextRequest{Prompt: "x"})
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Status != 400 {
		t.Fatalf("provider error: %v", err)
	}
	_, err = l.GenerateStructured(context.Background(), tool.StructuredRequest{TextRequest: tool.TextRequest{Prompt: "x"}})
	if err == nil || len(srv.Requests()) != 1 {
		t.Fatalf("a structured request without schema: %v after %d requests", err, len(srv.Requests()))
	}
	for _, img := range []string{"/tmp/a.png", "data:image/png,notbase64", "data:text/plain;base64,AAAA", "data:image/png;base64,@@"} {
		if _, err := l.GenerateText(context.Background(), tool.TextRequest{Prompt: "x", Image: img}); err == nil {
			t.Errorf("image %q accepted", img)
		}
	}
	if _, err := l.GenerateText(context.Background(), tool.TextRequest{}); err == nil {
		t.Error("an empty prompt was sent")
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("%d requests; refused requests must not be sent", n)
	}
}

func TestForToolsImage(t *testing.T) {
	f := flavors()[1]
	srv, p := f.start(t, nil)
	srv.Push(f.text("a red dot"))
	got, err := provider.ForTools(p, "m").GenerateText(context.Background(), tool.TextRequest{Prompt: "What is it?", Image: "data:image/png;base64,iVBORw0K"})
	if err != nil || got != "a red dot" {
		t.Fatalf("GenerateText = %q, %v", got, err)
	}
	if body := string(srv.Requests()[0].Body); !strings.Contains(body, `"media_type":"image/png"`) || !strings.Contains(body, `"data":"iVBORw0K"`) {
		t.Fatalf("image not sent: %s", body)
	}
	if _, err := provider.ParseDataURL("data:image/webp;base64,UklGRg=="); err != nil {
		t.Fatal(err)
	}
}

// TestForToolsGenerateTextImages: jean2's ctx.llm takes an array of images; the worker
// sends the first as Image and the rest as Images, and every one reaches the model.
func TestForToolsGenerateTextImages(t *testing.T) {
	for _, f := range flavors() {
		t.Run(f.name, func(t *testing.T) {
			srv, p := f.start(t, nil)
			srv.Push(f.text("two images"))
			l := provider.ForTools(p, f.model())
			req := tool.TextRequest{Prompt: "compare", Image: "data:image/png;base64,AQID", Images: []string{"data:image/jpeg;base64,BAUG"}}
			if _, err := l.GenerateText(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			body := string(srv.Requests()[0].Body)
			for _, want := range []string{"AQID", "BAUG", "image/jpeg"} {
				if !strings.Contains(body, want) {
					t.Errorf("%s is not in the request: %s", want, body)
				}
			}
			req = tool.TextRequest{Prompt: "x", Images: []string{"image/png;AQID"}}
			if _, err := l.GenerateText(context.Background(), req); err == nil || !strings.Contains(err.Error(), "image 0") {
				t.Errorf("a bad second image: %v", err)
			}
		})
	}
}

package llm

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/jean2/jean2/tool"
)

// fakeGen answers with the next scripted reply and records every request.
type fakeGen struct {
	mu       sync.Mutex
	replies  []string
	err      error
	requests []tool.TextRequest
}

func (f *fakeGen) GenerateText(_ context.Context, req tool.TextRequest) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, req)
	if f.err != nil {
		return "", f.err
	}
	if len(f.requests) > len(f.replies) {
		return "", errors.New("fake: no reply scripted")
	}
	return f.replies[len(f.requests)-1], nil
}

var personSchema = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0}},"required":["name","age"],"additionalProperties":false}`)

func structuredReq() tool.StructuredRequest {
	return tool.StructuredRequest{
		TextRequest: tool.TextRequest{Prompt: "Who is Ada?", System: "Be brief.", Model: "m1", MaxTokens: 100},
		Schema:      personSchema,
	}
}

func TestUnconfiguredWrapsErrNoLLM(t *testing.T) {
	var l tool.LLM = Unconfigured{}
	_, err := l.GenerateText(context.Background(), tool.TextRequest{Prompt: "hi"})
	if !errors.Is(err, tool.ErrNoLLM) || !strings.Contains(err.Error(), "set a provider in jean2's configuration") {
		t.Fatalf("GenerateText error = %v", err)
	}
	_, err = l.GenerateStructured(context.Background(), structuredReq())
	if !errors.Is(err, tool.ErrNoLLM) {
		t.Fatalf("GenerateStructured error = %v", err)
	}
}

func TestStructuredFirstAnswerValid(t *testing.T) {
	gen := &fakeGen{replies: []string{`{ "name": "Ada", "age": 36 }`}}
	got, err := Structured(context.Background(), gen, structuredReq())
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != `{"name":"Ada","age":36}` {
		t.Fatalf("got %s", got)
	}
	if len(gen.requests) != 1 {
		t.Fatalf("%d requests, want 1", len(gen.requests))
	}
	r := gen.requests[0]
	if r.Prompt != "Who is Ada?" || r.Model != "m1" || r.MaxTokens != 100 {
		t.Fatalf("request lost fields: %+v", r)
	}
	if !strings.HasPrefix(r.System, "Be brief.") || !strings.Contains(r.System, `"required":["name","age"]`) {
		t.Fatalf("system text lacks the caller's system or the schema: %q", r.System)
	}
}

func TestStructuredToleratesFencesAndProse(t *testing.T) {
	for name, reply := range map[string]string{
		"json fence":     "Here you go:\n```json\n{\"name\": \"Ada\", \"age\": 36}\n```\nAnything else?",
		"bare fence":     "```\n{\"name\":\"Ada\",\"age\":36}\n```",
		"unclosed":       "```json\n{\"name\":\"Ada\",\"age\":36}",
		"prose around":   "Sure! {\"name\":\"Ada\",\"age\":36} Hope that helps {not json}",
		"one-line fence": "```{\"name\":\"Ada\",\"age\":36}```",
	} {
		t.Run(name, func(t *testing.T) {
			gen := &fakeGen{replies: []string{reply}}
			got, err := Structured(context.Background(), gen, structuredReq())
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != `{"name":"Ada","age":36}` || len(gen.requests) != 1 {
				t.Fatalf("got %s after %d requests", got, len(gen.requests))
			}
		})
	}
}

func TestStructuredRepairsOnce(t *testing.T) {
	gen := &fakeGen{replies: []string{`{"name":"Ada","age":"old"}`, `{"name":"Ada","age":36}`}}
	got, err := Structured(context.Background(), gen, structuredReq())
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != `{"name":"Ada","age":36}` {
		t.Fatalf("got %s", got)
	}
	if len(gen.requests) != 2 {
		t.Fatalf("%d requests, want 2", len(gen.requests))
	}
	repair := gen.requests[1].Prompt
	for _, want := range []string{"Who is Ada?", `{"name":"Ada","age":"old"}`, "/age", "corrected JSON"} {
		if !strings.Contains(repair, want) {
			t.Errorf("repair prompt lacks %q:\n%s", want, repair)
		}
	}
	if gen.requests[1].System != gen.requests[0].System {
		t.Error("repair attempt lost the schema in the system text")
	}
}

func TestStructuredFailsAfterOneRepair(t *testing.T) {
	gen := &fakeGen{replies: []string{"no idea", `{"name":"Ada"}`, `{"name":"Ada","age":36}`}}
	_, err := Structured(context.Background(), gen, structuredReq())
	var se *StructuredError
	if !errors.As(err, &se) {
		t.Fatalf("error = %v, want *StructuredError", err)
	}
	if len(gen.requests) != 2 {
		t.Fatalf("%d requests, want exactly 2 (one repair)", len(gen.requests))
	}
	if !strings.Contains(gen.requests[1].Prompt, "holds no JSON value") {
		t.Errorf("repair prompt does not say the first answer had no JSON: %s", gen.requests[1].Prompt)
	}
	if !strings.Contains(err.Error(), "age") || se.Answer != `{"name":"Ada"}` {
		t.Fatalf("error does not name the missing property: %v (answer %q)", err, se.Answer)
	}
}

func TestStructuredBadSchemaAndGeneratorError(t *testing.T) {
	gen := &fakeGen{replies: []string{"{}"}}
	req := structuredReq()
	req.Schema = json.RawMessage(`{"type": 12}`)
	if _, err := Structured(context.Background(), gen, req); err == nil || !strings.Contains(err.Error(), "schema") {
		t.Fatalf("bad schema error = %v", err)
	}
	req.Schema = nil
	if _, err := Structured(context.Background(), gen, req); err == nil || !strings.Contains(err.Error(), "no schema") {
		t.Fatalf("missing schema error = %v", err)
	}
	if len(gen.requests) != 0 {
		t.Fatal("the model was asked although the schema was unusable")
	}
	boom := errors.New("provider down")
	gen = &fakeGen{err: boom}
	if _, err := Structured(context.Background(), gen, structuredReq()); !errors.Is(err, boom) || len(gen.requests) != 1 {
		t.Fatalf("generator error = %v after %d requests", err, len(gen.requests))
	}
	if _, err := Structured(context.Background(), nil, structuredReq()); !errors.Is(err, tool.ErrNoLLM) {
		t.Fatalf("nil generator error = %v", err)
	}
}

func TestFromText(t *testing.T) {
	gen := TextGeneratorFunc(func(_ context.Context, req tool.TextRequest) (string, error) {
		if strings.Contains(req.System, "JSON Schema") {
			return `["a","b"]`, nil
		}
		return "plain " + req.Prompt, nil
	})
	l := FromText(gen)
	s, err := l.GenerateText(context.Background(), tool.TextRequest{Prompt: "x"})
	if err != nil || s != "plain x" {
		t.Fatalf("GenerateText = %q, %v", s, err)
	}
	v, err := l.GenerateStructured(context.Background(), tool.StructuredRequest{Schema: json.RawMessage(`{"type":"array","items":{"type":"string"}}`)})
	if err != nil || string(v) != `["a","b"]` {
		t.Fatalf("GenerateStructured = %s, %v", v, err)
	}
}

func TestExtractJSONScalarsAndEmpty(t *testing.T) {
	if v, err := ExtractJSON(" 42 "); err != nil || string(v) != "42" {
		t.Fatalf("scalar: %s %v", v, err)
	}
	if v, err := ExtractJSON("\"has ```fences``` inside\""); err != nil || string(v) != "\"has ```fences``` inside\"" {
		t.Fatalf("string with fences: %s %v", v, err)
	}
	if _, err := ExtractJSON("   "); err == nil {
		t.Fatal("empty answer accepted")
	}
	if _, err := ExtractJSON(strings.Repeat("{", 10000)); err == nil {
		t.Fatal("garbage accepted")
	}
}

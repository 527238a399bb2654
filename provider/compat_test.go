package provider_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/provider/providertest"
)

// TestOpenAICompatibleServerQuirks feeds what compatible servers are known to send that
// OpenAI itself does not.
func TestOpenAICompatibleServerQuirks(t *testing.T) {
	f := flavors()[0]
	for _, c := range []struct {
		name  string
		reply providertest.Reply
		want  []string
	}{
		{
			// llama.cpp and some proxies end with the finish and close, without [DONE] or usage.
			name:  "no [DONE]",
			reply: providertest.NewOpenAIStream("m").Text("hi").Finish("stop").Reply(),
			want:  []string{`text "hi"`, "finish stop"},
		},
		{
			// Several servers number every parallel call 0; a new id means a new call.
			name: "every call at index 0",
			reply: providertest.NewOpenAIStream("m").ToolCall(0, "a", "one", `{"x":1}`).ToolCall(0, "b", "two", "").
				ToolArgs(0, `{"y":2}`).Finish("tool_calls").Done().Reply(),
			want: []string{"start 0 a one", `args 0 {"x":1}`, "start 1 b two", `args 1 {"y":2}`, "finish tool_calls"},
		},
		{
			// Ollama says "stop" after tool calls; the calls decide.
			name:  "stop after a tool call, no arguments",
			reply: providertest.NewOpenAIStream("m").ToolCall(0, "c", "now", "").Finish("stop").Done().Reply(),
			want:  []string{"start 0 c now", "args 0 {}", "finish tool_calls"},
		},
		{
			name: "reasoning_content, comments, whole call in one chunk",
			reply: providertest.NewOpenAIStream("m").Reasoning("think ").Comment("OPENROUTER PROCESSING").Reasoning("more").
				Text("Answer").ToolCall(0, "c", "t", `{"a":true}`).Finish("tool_calls").Usage(3, 4).Done().Reply(),
			want: []string{`reasoning "think "`, `reasoning "more"`, `text "Answer"`, "start 0 c t", `args 0 {"a":true}`, "usage 3/4", "finish tool_calls"},
		},
		{
			// The usage chunk is lost when the connection drops after the finish: the answer stands.
			name:  "drop after the finish",
			reply: providertest.NewOpenAIStream("m").Text("done").Finish("stop").Drop().Reply(),
			want:  []string{`text "done"`, "finish stop"},
		},
		{
			name:  "content filter",
			reply: providertest.NewOpenAIStream("m").Finish("content_filter").Done().Reply(),
			want:  []string{"finish content_filter"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, p := f.start(t, nil)
			srv.Push(c.reply)
			s, err := p.Stream(context.Background(), ask("m"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := events(t, s)
			if err != nil {
				t.Fatal(err)
			}
			equalLines(t, got, c.want)
		})
	}
}

func TestOpenAICallWithoutIDGetsOne(t *testing.T) {
	srv, p := flavors()[0].start(t, nil)
	srv.Push(providertest.NewOpenAIStream("m").
		Chunk(`{"tool_calls":[{"index":0,"type":"function","function":{"name":"t","arguments":"{}"}}]}`).
		Finish("tool_calls").Done().Reply())
	s, err := p.Stream(context.Background(), ask("m"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := provider.Collect(s)
	if err != nil || len(r.ToolCalls) != 1 || r.ToolCalls[0].ID == "" || r.ToolCalls[0].Name != "t" {
		t.Fatalf("Collect = %+v, %v", r, err)
	}
}

func TestStreamThatEndsBeforeTheFinish(t *testing.T) {
	for _, f := range flavors() {
		t.Run(f.name, func(t *testing.T) {
			srv, p := f.start(t, nil)
			var cut providertest.Reply
			if f.kind == provider.KindOpenAI {
				cut = providertest.NewOpenAIStream("m").Text("and then").Reply()
			} else {
				cut = providertest.NewAnthropicStream("m", 1).BeginText().TextDelta("and then").Reply()
			}
			srv.Push(cut)
			s, err := p.Stream(context.Background(), ask("m"))
			if err != nil {
				t.Fatal(err)
			}
			r, err := provider.Collect(s)
			var pe *provider.Error
			if !errors.As(err, &pe) || !pe.Partial || r.Text != "and then" {
				t.Fatalf("Collect = %+v, %v; want the text so far and a partial error", r, err)
			}
		})
	}
}

func TestAnthropicStreamDetails(t *testing.T) {
	f := flavors()[1]
	srv, p := f.start(t, nil)
	srv.Push(providertest.NewAnthropicStream("m", 21).
		BeginThinking().ThinkingDelta("Let me see.").EndBlock().
		BeginText().TextDelta("Sure.").Ping().EndBlock().
		ToolUse("toolu_x", "now").
		Stop("tool_use", 9).Reply())
	s, err := p.Stream(context.Background(), ask("m"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := events(t, s)
	if err != nil {
		t.Fatal(err)
	}
	equalLines(t, got, []string{`reasoning "Let me see."`, `text "Sure."`, "start 0 toolu_x now", "args 0 {}", "usage 21/9", "finish tool_calls"})
}

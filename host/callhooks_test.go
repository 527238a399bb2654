package host_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/tool"
)

type fixedLLM struct{ text string }

func (l fixedLLM) GenerateText(_ context.Context, req tool.TextRequest) (string, error) {
	return l.text + ":" + req.Prompt, nil
}
func (l fixedLLM) GenerateStructured(context.Context, tool.StructuredRequest) (json.RawMessage, error) {
	return json.RawMessage(`{}`), nil
}

// A caller's LLM serves the call's ctx.llm, and a caller's log handler receives the tool's
// log lines besides the host's log (MCP uses both).
func TestCallLLMAndLogHandler(t *testing.T) {
	f := newFixture(t)
	f.addTool("talk", jsTool("talk", "", `ctx.logger.warn('about to ask', { n: 1 });
  const text = await ctx.llm.generateText({ prompt: 'hi' });
  return { success: true, result: text };`))
	f.start()
	if f.h.HasLLM() {
		t.Fatal("a host without a provider says it has one")
	}
	// Without a caller's LLM the host's (unconfigured) answers.
	if out := f.call("talk", `{}`); out.Result.Success || !strings.Contains(out.Result.Error, "no LLM provider") {
		t.Fatalf("unconfigured: %+v", out.Result)
	}
	sink := &logSink{}
	got := result[string](t, f.call("talk", `{}`, func(c *host.Call) {
		c.LLM = fixedLLM{"sampled"}
		c.LogHandler = sink
	}))
	if got != "sampled:hi" {
		t.Fatalf("per-call LLM: %q", got)
	}
	if !strings.Contains(sink.all(), "WARN about to ask") || !strings.Contains(sink.all(), "tool=talk") {
		t.Fatalf("caller's log: %q", sink.all())
	}
	if !strings.Contains(f.logs.all(), "about to ask") {
		t.Fatalf("host log lost the line: %q", f.logs.all())
	}
}

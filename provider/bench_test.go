package provider_test

import (
	"context"
	"testing"

	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/provider/providertest"
)

// BenchmarkStream measures one streamed answer of 500 text pieces and a tool call from a
// local fake server, request to last event: the cost jean2 adds per answer.
func BenchmarkStream(b *testing.B) {
	pieces := make([]string, 500)
	for i := range pieces {
		pieces[i] = "token "
	}
	for _, f := range []struct {
		name  string
		srv   func(testing.TB) *providertest.Server
		kind  provider.Kind
		reply providertest.Reply
	}{
		{"openai", providertest.NewOpenAI, provider.KindOpenAI, (func() providertest.Reply {
			s := providertest.NewOpenAIStream("m")
			for _, p := range pieces {
				s.Text(p)
			}
			return s.ToolCall(0, "c", "t", `{"a":1}`).Finish("tool_calls").Usage(1, 2).Done().Reply()
		})()},
		{"anthropic", providertest.NewAnthropic, provider.KindAnthropic, providertest.NewAnthropicStream("m", 1).
			Text(pieces...).ToolUse("c", "t", `{"a":1}`).Stop("tool_use", 2).Reply()},
	} {
		b.Run(f.name, func(b *testing.B) {
			srv := f.srv(b)
			srv.Respond(func(providertest.Request) providertest.Reply { return f.reply })
			p, err := provider.New(provider.Config{Name: "bench", Kind: f.kind, BaseURL: srv.BaseURL()}, nil)
			if err != nil {
				b.Fatal(err)
			}
			req := provider.Request{Model: "m", Messages: []provider.Message{{Role: provider.RoleUser, Text: "go"}}}
			for b.Loop() {
				s, err := p.Stream(context.Background(), req)
				if err != nil {
					b.Fatal(err)
				}
				if r, err := provider.Collect(s); err != nil || len(r.ToolCalls) != 1 {
					b.Fatal(r, err)
				}
			}
		})
	}
}

package harness_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/store"
)

const redPixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"

// chartTool returns an image and a line of text, as a jean2 tool author would.
const chartTool = `
export const definition = { name: 'chart', description: 'Draw a chart.', inputSchema: { type: 'object' } };
export async function execute() {
  return { success: true, content: [{ type: 'text', text: 'the chart:' }, { type: 'image', data: '` + redPixel + `', mimeType: 'image/png' }] };
}
`

// A tool's image reaches the model as an image in the provider's own wire format, is kept
// with the call, and is replayed with the history on the next turn (issue 25, point 2;
// issue 24, point 15).
func TestToolImageReachesTheModel(t *testing.T) {
	for _, tc := range []struct {
		flavor providertest.Flavor
		call   providertest.Reply
		done   func(string) providertest.Reply
		want   []string // in the body of each request after the call
	}{
		{providertest.Anthropic,
			providertest.NewAnthropicStream("claude-test", 10).ToolUse("toolu_1", "chart", "{}").Stop("tool_use", 5).Reply(),
			func(s string) providertest.Reply { return providertest.AnthropicText("claude-test", s) },
			[]string{`{"tool_use_id":"toolu_1","is_error":false,"content":[{"text":"the chart:","type":"text"},{"source":{"data":"` + redPixel + `","media_type":"image/png","type":"base64"},"type":"image"}],"type":"tool_result"}`}},
		{providertest.OpenAI,
			providertest.NewOpenAIStream("gpt-test").ToolCall(0, "call_1", "chart", "{}").Finish("tool_calls").Done().Reply(),
			func(s string) providertest.Reply { return providertest.OpenAIText("gpt-test", s) },
			[]string{`"content":"the chart:\n[image/png 69 B: in the user message after the tool results]"`,
				`{"content":[{"text":"The images of the result of tool call call_1:","type":"text"},{"image_url":{"url":"data:image/png;base64,` + redPixel + `"},"type":"image_url"}],"role":"user"}`}},
	} {
		t.Run(fmt.Sprint(tc.flavor), func(t *testing.T) {
			f := newFixture(t, fixtureOptions{flavor: tc.flavor, tools: map[string]string{"chart": chartTool}})
			f.srv.Push(tc.call, tc.done("A red pixel."), tc.done("It was red."))
			f.turn("draw a chart")
			f.turn("what colour was it?")
			reqs := f.srv.Requests()
			if len(reqs) != 3 {
				t.Fatalf("%d requests", len(reqs))
			}
			for i := 1; i <= 2; i++ {
				body := string(reqs[i].Body)
				for _, want := range tc.want {
					if !strings.Contains(body, want) {
						t.Fatalf("request %d lacks\n%s\nin\n%s", i+1, want, body)
					}
				}
			}
			var call store.Part
			for _, m := range f.messages() {
				for _, p := range m.Parts {
					if p.Kind == store.PartToolCall {
						call = p
					}
				}
			}
			png, _ := base64.StdEncoding.DecodeString(redPixel)
			if call.MediaType != store.ToolContentType || !strings.Contains(string(call.Data), redPixel) || len(png) != 69 ||
				!strings.Contains(string(call.Visualization), `"type":"images"`) || call.Result != "the chart:" {
				t.Fatalf("stored call part: %s %s result %q viz %.80s", call.MediaType, call.Data, call.Result, call.Visualization)
			}
			// The event log does not hold the images a second time: people have them in the
			// visualization.
			for _, e := range f.events() {
				var pe struct{ Part store.Part }
				if e.Type == harness.EventPartUpdated && json.Unmarshal(e.Payload, &pe) == nil && pe.Part.CallID != "" && len(pe.Part.Data) > 0 {
					t.Fatalf("event %d carries the call's kept images (%d bytes)", e.Seq, len(pe.Part.Data))
				}
			}
		})
	}
}

package mcpclient

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server's prompts are listed under their qualified names, got from the server, and
// listed again when the server says they changed, with the subscribers told.
func TestImportedPrompts(t *testing.T) {
	p := newPeer(t)
	greet := func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Hello " + req.Params.Arguments["who"]}}}}, nil
	}
	p.srv.AddPrompt(&mcp.Prompt{Name: "greet", Description: "Greet someone.", Arguments: []*mcp.PromptArgument{{Name: "who", Required: true}}}, greet)
	m := New(Config{Servers: []ServerConfig{{Name: "peer.one", Type: "http", URL: p.url, File: "mcp.json"}}}, nil, Options{MinBackoff: 50 * time.Millisecond})
	defer m.Close()
	var told atomic.Int32
	stop := m.OnPromptsChange(func() { told.Add(1) })
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m.Start(ctx)

	names := func() string {
		var out []string
		for _, pr := range m.ImportedPrompts() {
			out = append(out, pr.Name)
		}
		return strings.Join(out, " ")
	}
	if got := names(); got != "mcp__peer_one__greet" {
		t.Fatalf("prompts: %q", got)
	}
	waitFor(t, "the subscribers told of the connection", func() bool { return told.Load() >= 1 })
	res, err := m.GetImportedPrompt(ctx, "mcp__peer_one__greet", map[string]string{"who": "Ann"})
	if err != nil || res.Messages[0].Content.(*mcp.TextContent).Text != "Hello Ann" {
		t.Fatalf("get: %v %+v", err, res)
	}
	if _, err := m.GetImportedPrompt(ctx, "mcp__peer_one__nope", nil); err == nil || !strings.Contains(err.Error(), "no imported MCP server offers the prompt mcp__peer_one__nope") {
		t.Fatalf("get of no prompt: %v", err)
	}

	before := told.Load()
	p.srv.AddPrompt(&mcp.Prompt{Name: "bye"}, greet) // the go-sdk sends prompts/list_changed
	waitFor(t, "the new prompt", func() bool { return strings.Contains(names(), "mcp__peer_one__bye") && told.Load() > before })
}

package mcpserver_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jean2/jean2/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeImports stands in for mcpclient.Manager: prompts of imported servers, changed by hand.
type fakeImports struct {
	mu      sync.Mutex
	prompts []*mcp.Prompt
	changed func()
	got     map[string]string // the arguments of the last get
}

var _ mcpserver.PromptImports = (*fakeImports)(nil)

func (f *fakeImports) ImportedPrompts() []*mcp.Prompt {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.prompts
}

func (f *fakeImports) GetImportedPrompt(_ context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = args
	if name != "mcp__docs__summary" {
		return nil, errors.New("no imported MCP server offers the prompt " + name)
	}
	return &mcp.GetPromptResult{Description: "from docs", Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Summarize " + args["doc"]}}}}, nil
}

func (f *fakeImports) OnPromptsChange(fn func()) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.changed = fn
	return func() {}
}

// change sets the imported prompts and tells the server, as a server's list_changed does.
func (f *fakeImports) change(prompts ...*mcp.Prompt) {
	f.mu.Lock()
	f.prompts = prompts
	fn := f.changed
	f.mu.Unlock()
	fn()
}

// Imported servers' prompts are offered beside the skills and got from their server; a
// change of them reaches the clients at once (no poll runs here).
func TestImportedPromptsAreOffered(t *testing.T) {
	imports := &fakeImports{prompts: []*mcp.Prompt{{Name: "mcp__docs__summary", Description: "Summarize a doc.", Arguments: []*mcp.PromptArgument{{Name: "doc"}}}}}
	r := newRig(t, func(r *rig) { r.opts.PromptPoll = -1; r.opts.Imports = imports })
	changed := make(chan struct{}, 16)
	cs := r.connect(classic, &mcp.ClientOptions{PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
		changed <- struct{}{}
	}})
	if p := listPrompts(t, cs)["mcp__docs__summary"]; p == nil || p.Description != "Summarize a doc." || p.Arguments[0].Name != "doc" {
		t.Fatalf("prompts: %s", toJSON(listPrompts(t, cs)))
	}
	res, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "mcp__docs__summary", Arguments: map[string]string{"doc": "a.md"}})
	if err != nil || res.Description != "from docs" || res.Messages[0].Content.(*mcp.TextContent).Text != "Summarize a.md" {
		t.Fatalf("get: %v %s", err, toJSON(res))
	}

	imports.change(&mcp.Prompt{Name: "mcp__docs__summary"}, &mcp.Prompt{Name: "mcp__docs__outline"})
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/prompts/list_changed after the imported prompts changed")
	}
	if got := listPrompts(t, cs); got["mcp__docs__outline"] == nil || len(got) != 2 {
		t.Fatalf("after the change: %s", toJSON(got))
	}

}

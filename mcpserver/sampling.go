package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jean2/jean2/llm"
	"github.com/jean2/jean2/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// defaultMaxTokens bounds a sampled answer when the tool gives no limit (MCP requires one).
const defaultMaxTokens = 1024

// samplingModel is ctx.llm served by the client's model (sampling/createMessage), for a host
// that has no provider of its own. Structured requests go through llm.Structured on top.
type samplingModel struct{ peer peer }

func (m samplingModel) GenerateText(ctx context.Context, req tool.TextRequest) (string, error) {
	if req.Image != "" || len(req.Images) > 0 {
		return "", fmt.Errorf("ctx.llm through the MCP client's sampling takes text only: send the prompt without an image")
	}
	maxTokens := int64(req.MaxTokens)
	if maxTokens <= 0 {
		maxTokens = defaultMaxTokens
	}
	p := &mcp.CreateMessageParams{
		Messages:     []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: req.Prompt}}},
		SystemPrompt: req.System,
		MaxTokens:    maxTokens,
	}
	if req.Model != "" {
		p.ModelPreferences = &mcp.ModelPreferences{Hints: []*mcp.ModelHint{{Name: req.Model}}}
	}
	content, _, err := m.peer.sample(ctx, p)
	if err != nil {
		return "", fmt.Errorf("ctx.llm through the MCP client's sampling: %w", err)
	}
	var text strings.Builder
	for _, c := range content {
		if t, ok := c.(*mcp.TextContent); ok {
			text.WriteString(t.Text)
		}
	}
	if text.Len() == 0 {
		return "", fmt.Errorf("ctx.llm through the MCP client's sampling: the client's model answered with no text")
	}
	return text.String(), nil
}

// orSampling is the host's model while one is configured, and the client's (sampling) while
// none is: jean2 serve's model is resolved at each request, so a provider set up later
// takes over without the client reconnecting.
type orSampling struct {
	first tool.LLM
	then  llm.TextGenerator // the client's model, or missingSampling
}

func (o orSampling) GenerateText(ctx context.Context, req tool.TextRequest) (string, error) {
	text, err := o.first.GenerateText(ctx, req)
	if errors.Is(err, tool.ErrNoLLM) {
		return o.then.GenerateText(ctx, req)
	}
	return text, err
}

package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The prompts of the MCP servers jean2 imports, offered beside the skills and the saved
// prompts under the names the servers' tools have (mcp__SERVER__PROMPT), so a client that
// reaches jean2 reaches them too, as it reaches their tools. prompts/get is forwarded to the
// server; a server's prompts/list_changed (or its coming and going) reaches jean2's clients
// as jean2's own, at once. No skill or saved prompt can take such a name (skills.CheckName
// allows no "__").

// PromptImports are the prompts of imported MCP servers (mcpclient.Manager).
type PromptImports interface {
	// ImportedPrompts lists them now, each under the name jean2 offers it by.
	ImportedPrompts() []*mcp.Prompt
	// GetImportedPrompt gets one, by that name, from its server.
	GetImportedPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error)
	// OnPromptsChange calls f after they may have changed, until stop.
	OnPromptsChange(f func()) (stop func())
}

// importedOffers adds the imported prompts to offers.
func (s *Server) importedOffers(offers map[string]promptOffer) {
	if s.opts.Imports == nil {
		return
	}
	for _, p := range s.opts.Imports.ImportedPrompts() {
		key, _ := json.Marshal(p)
		offers[p.Name] = promptOffer{p, "imported " + string(key), s.getImported}
	}
}

// getImported answers prompts/get of an imported prompt with the server's answer.
func (s *Server) getImported(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	res, err := s.opts.Imports.GetImportedPrompt(ctx, req.Params.Name, req.Params.Arguments)
	if err != nil {
		return nil, fmt.Errorf("prompts/get %s: %w", req.Params.Name, err)
	}
	return &mcp.GetPromptResult{Description: res.Description, Messages: res.Messages}, nil
}

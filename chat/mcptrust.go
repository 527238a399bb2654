package chat

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/jean2/jean2/store"
)

// askMCPTrust asks, as the chat opens a workspace, whether to trust its .jean2/mcp.json
// when no person has trusted that content yet (the server does not start its servers until
// then): it shows what the file starts and, on y, trusts exactly that content. A file
// that changed between the question and the answer is not trusted (the server answers
// 409), and is asked about at the next chat.
func askMCPTrust(ctx context.Context, o Options, api *Client, ws store.Workspace) error {
	path := "/api/workspaces/" + url.PathEscape(ws.ID) + "/mcp-trust"
	var st struct {
		File     string   `json:"file"`
		Present  bool     `json:"present"`
		SHA256   string   `json:"sha256"`
		Trusted  bool     `json:"trusted"`
		Commands []string `json:"commands"`
		Error    string   `json:"error"`
	}
	if err := api.Call(ctx, http.MethodGet, path, nil, &st); err != nil {
		if _, missing := isAPIError(err, "not_found"); missing {
			return nil // a server without the route: nothing to ask
		}
		return fmt.Errorf("whether %s's mcp.json is trusted: %w", ws.Path, err)
	}
	if !st.Present || st.Trusted {
		return nil
	}
	if st.Error != "" {
		fmt.Fprintf(o.Stderr, "jean2 chat: %s cannot be used: %s\n", st.File, st.Error)
		return nil
	}
	if o.ConfirmMCPTrust == nil || !o.ConfirmMCPTrust(st.File, ws.Path, st.Commands) {
		fmt.Fprintf(o.Stdout, "Its MCP servers stay off; trust it later with jean2 mcp trust --workspace %s.\n", ws.Path)
		return nil
	}
	if err := api.Call(ctx, http.MethodPost, path, map[string]any{"sha256": st.SHA256}, nil); err != nil {
		return fmt.Errorf("trust %s: %w", st.File, err)
	}
	fmt.Fprintf(o.Stdout, "Trusted; its MCP servers are starting.\n")
	return nil
}

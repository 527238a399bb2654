package e2e_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/mcpclient"
	"github.com/jean2/jean2/mcpclient/oauthtest"
	"github.com/jean2/jean2/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPServerConnectButton: Settings lists a hosted MCP server that needs OAuth as "needs
// sign-in"; its Connect button opens the authorization page in a new tab (the authorization
// server approves at once and redirects to jean2's loopback listener, as after a person's
// "allow"), and the row turns connected, with Sign out, which takes the token back.
func TestMCPServerConnectButton(t *testing.T) {
	as := oauthtest.NewAuthServer(t, time.Hour)
	url := oauthtest.ProtectedServer(t, as)
	var m *mcpclient.Manager
	f := newFixtureWith(t, func(f *fixture, cfg *server.Config) {
		m = mcpclient.New(mcpclient.Config{Servers: []mcpclient.ServerConfig{{Name: "hosted", URL: url, Type: "http", File: "mcp.json"}}}, nil,
			mcpclient.Options{Tokens: mcpclient.NewTokenStore(f.home), MinBackoff: time.Minute, MaxBackoff: time.Minute,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		m.Start(ctx)
		cfg.Host.Sources = append([]host.ToolSource{}, m.Sources()...)
	})
	t.Cleanup(m.Close)
	f.otherSite = true // the sign-in tab opens the authorization server's page
	f.open("#/settings")
	f.waitText(`tr[data-server="hosted"]`, "needs sign-in")
	f.waitText(`tr[data-server="hosted"] .mcp-error`, "jean2 mcp login hosted")
	f.clickText(`tr[data-server="hosted"]`, "Connect hosted")
	f.waitJS("the server connected", `document.querySelector('tr[data-server="hosted"]')?.dataset.state === "connected"`)
	f.waitText(`tr[data-server="hosted"]`, "Sign out")
	if tools, _ := m.Servers()[0].Tools(); len(tools) != 1 {
		t.Fatalf("tools after Connect: %d", len(tools))
	}
	f.clickText(`tr[data-server="hosted"]`, "Sign out hosted")
	f.waitJS("the Connect button back", `[...document.querySelectorAll('tr[data-server="hosted"] button')].some((b) => b.textContent.trim() === "Connect hosted")`)
}

// TestMCPServerBrowse: Browse on a connected server lists its resources and prompts; a
// resource opens to its text.
func TestMCPServerBrowse(t *testing.T) {
	peer := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1"}, nil)
	peer.AddResource(&mcp.Resource{URI: "note://readme", Name: "readme", Title: "Read me", MIMEType: "text/markdown"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/markdown", Text: "# Hello from the resource"}}}, nil
		})
	peer.AddPrompt(&mcp.Prompt{Name: "review", Description: "Review a change."},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return peer }, nil))
	t.Cleanup(ts.Close)
	var m *mcpclient.Manager
	f := newFixtureWith(t, func(f *fixture, cfg *server.Config) {
		m = mcpclient.New(mcpclient.Config{Servers: []mcpclient.ServerConfig{{Name: "docs", URL: ts.URL, Type: "http", File: "mcp.json"}}}, nil,
			mcpclient.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		m.Start(ctx)
		cfg.Host.Sources = append([]host.ToolSource{}, m.Sources()...)
	})
	t.Cleanup(m.Close)
	f.open("#/settings")
	f.clickText(`tr[data-server="docs"]`, "Browse docs")
	f.waitText(".mcp-catalog .mcp-prompts", "review — Review a change.")
	f.clickText(`.mcp-catalog li[data-uri="note://readme"]`, "Read me")
	f.waitText(".mcp-catalog .mcp-resource-text", "# Hello from the resource")
}

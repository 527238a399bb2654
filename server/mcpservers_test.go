package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/mcpclient"
	"github.com/jean2/jean2/mcpclient/oauthtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The web client's Connect: a hosted server of $JEAN2_HOME/mcp.json that needs OAuth is
// listed as "needs sign-in"; POST …/sign-in answers with the authorization page; once the
// person allowed access there (a browser following the redirect to the loopback listener)
// the server connects at once — its backoff is a minute, so only the sign-in's retry
// explains it — and is listed connected and signed in; DELETE forgets the token.
func TestMCPServersSignInFromTheWeb(t *testing.T) {
	as := oauthtest.NewAuthServer(t, time.Hour)
	url := oauthtest.ProtectedServer(t, as)
	f := newFixture(t)
	m := mcpclient.New(mcpclient.Config{Servers: []mcpclient.ServerConfig{{Name: "hosted", URL: url, Type: "http", File: "mcp.json"}}}, nil,
		mcpclient.Options{Tokens: mcpclient.NewTokenStore(f.home), MinBackoff: time.Minute, MaxBackoff: time.Minute,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m.Start(ctx)
	f.cfg.Host.Sources = append([]host.ToolSource{}, m.Sources()...)
	f.start()

	type view struct {
		Servers []mcpServerView `json:"servers"`
	}
	var v view
	f.call("GET", "/api/mcp/servers", nil, 200, &v)
	if len(v.Servers) != 1 || v.Servers[0].State != "needs sign-in" || v.Servers[0].SignedIn || v.Servers[0].URL != url {
		t.Fatalf("before: %+v", v.Servers)
	}
	f.call("POST", "/api/mcp/servers/nope/sign-in", nil, 404, nil)

	var started struct{ AuthorizationURL string }
	f.call("POST", "/api/mcp/servers/hosted/sign-in", nil, 202, &started)
	if started.AuthorizationURL == "" {
		t.Fatal("no authorization page")
	}
	f.call("POST", "/api/mcp/servers/hosted/sign-in", nil, 409, nil) // one at a time
	resp, err := http.Get(started.AuthorizationURL)                  // the person allows access
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for {
		f.call("GET", "/api/mcp/servers", nil, 200, &v)
		if s := v.Servers[0]; s.State == "connected" && s.SignedIn && !s.SigningIn {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("after signing in: %+v", v.Servers)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if tools, _ := m.Servers()[0].Tools(); len(tools) != 1 {
		t.Fatalf("tools after signing in: %d", len(tools))
	}
	f.call("DELETE", "/api/mcp/servers/hosted/sign-in", nil, 204, nil)
	f.call("GET", "/api/mcp/servers", nil, 200, &v)
	if v.Servers[0].SignedIn {
		t.Fatalf("after signing out: %+v", v.Servers)
	}
}

// An imported server's resources and prompts are listed (GET …/catalog) and a resource read
// (GET …/resource?uri=), for the web client; a server not connected is a 409 that says so.
func TestMCPServerCatalog(t *testing.T) {
	peer := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1"}, nil)
	peer.AddResource(&mcp.Resource{URI: "note://readme", Name: "readme", Title: "Read me", MIMEType: "text/markdown"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/markdown", Text: "# Hello"}}}, nil
		})
	peer.AddPrompt(&mcp.Prompt{Name: "review", Description: "Review a change."},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return peer }, nil))
	defer ts.Close()
	f := newFixture(t)
	m := mcpclient.New(mcpclient.Config{Servers: []mcpclient.ServerConfig{
		{Name: "docs", URL: ts.URL, Type: "http", File: "mcp.json"},
		{Name: "down", URL: "http://127.0.0.1:1/mcp", Type: "http", File: "mcp.json"},
	}}, nil, mcpclient.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m.Start(ctx)
	f.cfg.Host.Sources = append([]host.ToolSource{}, m.Sources()...)
	f.start()

	var cat struct {
		Resources []struct{ URI, Name, Title, MIMEType string }
		Prompts   []struct{ Name, Description string }
	}
	f.call("GET", "/api/mcp/servers/docs/catalog", nil, 200, &cat)
	if len(cat.Resources) != 1 || cat.Resources[0].URI != "note://readme" || cat.Resources[0].Title != "Read me" ||
		len(cat.Prompts) != 1 || cat.Prompts[0].Name != "review" {
		t.Fatalf("catalog: %+v", cat)
	}
	var read struct {
		Contents []struct{ URI, Text string }
	}
	f.call("GET", "/api/mcp/servers/docs/resource?uri=note://readme", nil, 200, &read)
	if len(read.Contents) != 1 || read.Contents[0].Text != "# Hello" {
		t.Fatalf("read: %+v", read)
	}
	f.call("GET", "/api/mcp/servers/docs/resource", nil, 400, nil)
	body := f.call("GET", "/api/mcp/servers/down/catalog", nil, 409, nil)
	if !strings.Contains(string(body), "connect it first") {
		t.Fatalf("down: %s", body)
	}
}

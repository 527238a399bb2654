package server

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/jean2/jean2/store"
)

// bearerTransport adds an API token to every request.
type bearerTransport struct {
	token string
	next  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// /mcp serves the tools to the official Go SDK's client over streamable HTTP, under the
// API's token rule; ?workspace= picks the workspace calls work in.
func TestMCPOverStreamableHTTP(t *testing.T) {
	f := newFixture(t)
	f.start()
	tok, err := f.srv.NewToken(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "server-test", Version: "1"}, nil)

	// Without the token the client cannot connect.
	if cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: f.ts.URL + "/mcp", MaxRetries: -1, DisableStandaloneSSE: true}, nil); err == nil {
		cs.Close()
		t.Fatal("connected to /mcp without the token")
	}

	other := t.TempDir()
	var ws store.Workspace
	status, body := f.request("POST", "/api/workspaces", map[string]any{"path": other}, http.Header{"Authorization": {"Bearer " + tok}})
	if status != 201 {
		t.Fatalf("create workspace: %d %s", status, body)
	}
	mustJSON(t, body, &ws)

	httpc := &http.Client{Transport: bearerTransport{token: tok, next: http.DefaultTransport}}
	for _, c := range []struct{ endpoint, folder string }{
		{f.ts.URL + "/mcp", f.ws},
		{f.ts.URL + "/mcp?workspace=" + ws.ID, other},
	} {
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: c.endpoint, HTTPClient: httpc, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatalf("connect to %s: %v", c.endpoint, err)
		}
		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, tl := range tools.Tools {
			names[tl.Name] = true
		}
		if !names["write_note"] || !names["confirm_it"] {
			t.Fatalf("tools listed over /mcp: %v", names)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_note", Arguments: map[string]any{"path": "mcp.txt", "text": "via mcp"}})
		if err != nil || res.IsError {
			t.Fatalf("call write_note over %s: %v %+v", c.endpoint, err, res)
		}
		if data, err := os.ReadFile(filepath.Join(c.folder, "mcp.txt")); err != nil || string(data) != "via mcp" {
			t.Fatalf("%s: mcp.txt = %q, %v", c.endpoint, data, err)
		}
		cs.Close()
	}
	if status, _ := f.request("POST", "/mcp?workspace=ws_missing", `{}`, http.Header{"Authorization": {"Bearer " + tok}}); status != 404 {
		t.Errorf("/mcp of an unknown workspace: %d", status)
	}
}

// /mcp?workspace= follows changes: the autoApprove setting decides the permissions of a
// client that cannot be asked as it is now, and a workspace moved to another folder has
// its calls work there, all in the client's one session (no change ends it).
func TestMCPFollowsSettingsAndWorkspaceChanges(t *testing.T) {
	f := newFixture(t).start()
	ws, _ := f.session()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "server-test", Version: "1"}, nil) // no elicitation
	endpoint := f.ts.URL + "/mcp?workspace=" + ws.ID
	connect := func() *mcp.ClientSession {
		t.Helper()
		httpc := &http.Client{Transport: bearerTransport{token: f.token, next: http.DefaultTransport}}
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: httpc, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatalf("connect to %s: %v", endpoint, err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	cs := connect()
	call := func(name string, args map[string]any) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("call %s in the session connected first: %v", name, err)
		}
		text := ""
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text += tc.Text
			}
		}
		if res.IsError {
			return "error: " + text
		}
		return text
	}
	if got := call("permit_it", map[string]any{"risk": "medium"}); !strings.Contains(got, "denied") {
		t.Fatalf("permission with autoApprove none: %s", got)
	}
	f.call("PATCH", "/api/settings", map[string]any{"autoApprove": "high"}, 200, nil)
	if got := call("permit_it", map[string]any{"risk": "medium"}); !strings.Contains(got, `"granted":true`) {
		t.Fatalf("permission after autoApprove high: %s", got)
	}

	moved := t.TempDir()
	f.call("PATCH", "/api/workspaces/"+ws.ID, map[string]any{"path": moved}, 200, nil)
	call("write_note", map[string]any{"path": "where.txt", "text": "moved"})
	if data, err := os.ReadFile(filepath.Join(moved, "where.txt")); err != nil || string(data) != "moved" {
		t.Fatalf("where.txt in the workspace's new folder: %q, %v", data, err)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "where.txt")); err == nil {
		t.Fatal("the call worked in the workspace's old folder")
	}
	// A deleted workspace's endpoint is gone.
	f.call("DELETE", "/api/workspaces/"+ws.ID, nil, 204, nil)
	if status, _ := f.request("POST", "/mcp?workspace="+ws.ID, `{}`, nil); status != 404 {
		t.Errorf("/mcp of a deleted workspace: %d", status)
	}
}

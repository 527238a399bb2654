package server

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jean2/jean2/host"
)

// jean2's own /mcp on the stateless revision (2026-07-28: no session, every request on its
// own) is guarded as the sessions are: a tools/list or tools/call without the token, from a
// rebound name or from another site's page, is refused before the MCP handler sees it, and
// so are spellings of the path that might slip past a prefix check. A request with the token
// from a program on loopback is answered, so the request itself is one the handler serves.
func TestAttackStatelessMCPWithoutToken(t *testing.T) {
	f := newFixture(t)
	f.tools = nil
	f.start()
	tok, err := f.srv.NewToken(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": map[string]any{}, "io.modelcontextprotocol/clientInfo": map[string]any{"name": "attacker", "version": "1"}}
	list := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": map[string]any{"_meta": meta}}
	call := map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": map[string]any{"_meta": meta, "name": "shell", "arguments": map[string]any{"command": "id"}}}
	stateless := func(extra http.Header, body map[string]any) http.Header {
		h := http.Header{"Accept": {"application/json, text/event-stream"}, "Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {body["method"].(string)}}
		if p, _ := body["params"].(map[string]any); p["name"] != nil {
			h["Mcp-Name"] = []string{p["name"].(string)}
		}
		for k, v := range extra {
			h[k] = v
		}
		return h
	}
	port := f.ts.URL[strings.LastIndex(f.ts.URL, ":"):]
	bearer := http.Header{"Authorization": {"Bearer " + tok}}
	cases := []struct {
		name, path, host string
		header           http.Header
		want             int
	}{
		{"no token", "/mcp", "", nil, http.StatusUnauthorized},
		{"no token, trailing slash", "/mcp/", "", nil, http.StatusUnauthorized},
		{"no token, a wrong token", "/mcp", "", http.Header{"Authorization": {"Bearer jean2_" + strings.Repeat("0", 40)}}, http.StatusUnauthorized},
		{"token, rebound name", "/mcp", "rebind.example" + port, bearer, http.StatusForbidden},
		{"token, another site's page", "/mcp", "", http.Header{"Authorization": bearer["Authorization"], "Origin": {"http://evil.example"}}, http.StatusForbidden},
		{"token, a page on another loopback port", "/mcp", "", http.Header{"Authorization": bearer["Authorization"], "Origin": {"http://127.0.0.1:1"}, "Sec-Fetch-Site": {"same-site"}}, http.StatusForbidden},
	}
	for _, c := range cases {
		for _, body := range []map[string]any{list, call} {
			status, resp := f.raw("POST", c.path, c.host, body, stateless(c.header, body))
			if status != c.want {
				t.Errorf("%s: POST %s %s: %d %.300s (want %d)", c.name, c.path, body["method"], status, resp, c.want)
			}
		}
	}
	// Other spellings of the path never reach the MCP handler without the token.
	for _, p := range []string{"//mcp", "/./mcp", "/api/../mcp", "/%6dcp", "/MCP"} {
		status, resp := f.raw("POST", p, "", list, stateless(nil, list))
		if status == http.StatusOK && strings.Contains(string(resp), `"tools"`) {
			t.Errorf("POST %s without a token listed the tools: %.300s", p, resp)
		}
	}
	status, resp := f.raw("POST", "/mcp", "", list, stateless(bearer, list))
	if status != http.StatusOK || !strings.Contains(string(resp), `"tools"`) {
		t.Fatalf("with the token: %d %.300s", status, resp)
	}
}

// TestAttackWorkspaceFolderSwappedAfterItWasAdded: a person adds ~/code/app as a workspace;
// before its first call, a tool of an enclosing workspace replaces the folder by a link to
// the user's other files. The server pins the folder when it is added (host.PinFolder), so
// the first call there is refused and says why; before, it read through the link.
func TestAttackWorkspaceFolderSwappedAfterItWasAdded(t *testing.T) {
	f := newFixture(t)
	f.tools = map[string]string{"read-note": `export const definition = { name: 'read_note', description: 'Reads a note.',
  inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } };
export async function execute(input, ctx) { return { success: true, result: await ctx.fs.readFile(input.path, 'utf-8') }; }
`}
	f.start()
	app := filepath.Join(f.ws, "app")
	user := filepath.Join(f.root, "user-files")
	for _, d := range []string{app, user} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(user, "notes.txt"), []byte("the user's private notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	var ws struct {
		ID string `json:"id"`
	}
	f.call("POST", "/api/workspaces", map[string]any{"path": app}, 201, &ws)
	if err := os.Rename(app, app+"-aside"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(user, app); err != nil {
		t.Fatal(err)
	}
	var out host.Outcome
	f.call("POST", "/api/tools/read_note/run", map[string]any{"args": map[string]any{"path": "notes.txt"}, "workspaceId": ws.ID}, 200, &out)
	if out.Result.Success || strings.Contains(string(out.Result.Result), "private notes") || !strings.Contains(out.Result.Error, "now leads to") {
		t.Fatalf("the first call in the swapped workspace: %+v", out.Result)
	}
}

package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
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

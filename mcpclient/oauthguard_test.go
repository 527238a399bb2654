package mcpclient

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A hostile MCP server on the internet names, in its protected-resource metadata, an
// authorization server on this machine (a loopback admin page) or the cloud's metadata
// address: the sign-in's client must not go there. A server that is itself local keeps
// reaching its local authorization server (the conformance suite's and jean2's own tests).
func TestAttackOAuthDiscoveryAimedAtLoopback(t *testing.T) {
	hit := 0
	local := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hit++
		_, _ = io.WriteString(w, `{"issuer":"x"}`)
	}))
	defer local.Close()

	// The hosted server is public (a literal public address, so no resolver is needed).
	public := oauthClient("https://8.8.8.8/mcp", nil)
	resp, err := public.Get(local.URL + "/.well-known/oauth-authorization-server")
	if err == nil {
		resp.Body.Close()
		t.Fatalf("a public server's sign-in reached %s (status %d)", local.URL, resp.StatusCode)
	}
	if !strings.Contains(err.Error(), "a loopback address") || !strings.Contains(err.Error(), "https://8.8.8.8/mcp") {
		t.Fatalf("refusal does not say what and why: %v", err)
	}
	if _, err := public.Get("http://169.254.169.254/latest/meta-data/"); err == nil || !strings.Contains(err.Error(), "link-local") {
		t.Fatalf("cloud metadata address: %v", err)
	}
	// A name resolving to loopback is judged after resolution.
	if _, err := public.Get(strings.Replace(local.URL, "127.0.0.1", "localhost", 1)); err == nil || !strings.Contains(err.Error(), "refused to connect") {
		t.Fatalf("localhost by name: %v", err)
	}
	if hit != 0 {
		t.Fatalf("the local server was reached %d times", hit)
	}

	// A local MCP server's sign-in reaches its local authorization server.
	for _, server := range []string{local.URL + "/mcp", "http://localhost:1/mcp", "http://10.0.0.5/mcp"} {
		resp, err := oauthClient(server, nil).Get(local.URL + "/.well-known/oauth-authorization-server")
		if err != nil {
			t.Fatalf("server %s: %v", server, err)
		}
		resp.Body.Close()
	}
	if hit != 3 {
		t.Fatalf("local server reached %d times, want 3", hit)
	}
}

// Package oauthtest has an OAuth authorization server and an MCP server that takes only its
// tokens, for the tests of jean2's sign-in to hosted MCP servers (mcpclient, server).
package oauthtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// AuthServer is a small OAuth authorization server: dynamic registration, the code flow
// (approving at once, as a person who clicked "allow"), and refresh tokens. Access tokens
// live ttl.
type AuthServer struct {
	*httptest.Server
	ttl time.Duration

	Mu      sync.Mutex
	Valid   map[string]time.Time // access token → expiry
	Refresh map[string]bool
	n       int
	Grants  []string // the grant types of the token requests, in order
}

func NewAuthServer(t testing.TB, ttl time.Duration) *AuthServer {
	as := &AuthServer{ttl: ttl, Valid: map[string]time.Time{}, Refresh: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": as.URL, "authorization_endpoint": as.URL + "/authorize", "token_endpoint": as.URL + "/token",
			"registration_endpoint": as.URL + "/register", "response_types_supported": []string{"code"},
			"grant_types_supported": []string{"authorization_code", "refresh_token"}, "code_challenge_methods_supported": []string{"S256"},
			"token_endpoint_auth_methods_supported": []string{"none"},
		})
	})
	mux.HandleFunc("POST /register", func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		_ = json.NewDecoder(r.Body).Decode(&m)
		m["client_id"] = "registered-client"
		m["token_endpoint_auth_method"] = "none"
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(m)
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256" {
			http.Error(w, "PKCE required", http.StatusBadRequest)
			return
		}
		http.Redirect(w, r, q.Get("redirect_uri")+"?code=the-code&state="+q.Get("state"), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		as.Mu.Lock()
		defer as.Mu.Unlock()
		grant := r.Form.Get("grant_type")
		as.Grants = append(as.Grants, grant)
		switch grant {
		case "authorization_code":
			if r.Form.Get("code") != "the-code" || r.Form.Get("code_verifier") == "" {
				http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
				return
			}
		case "refresh_token":
			if !as.Refresh[r.Form.Get("refresh_token")] {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprint(w, `{"error":"invalid_grant"}`)
				return
			}
		}
		as.n++
		access, refresh := fmt.Sprintf("access-%d", as.n), fmt.Sprintf("refresh-%d", as.n)
		as.Valid[access] = time.Now().Add(as.ttl)
		as.Refresh[refresh] = true
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": access, "token_type": "Bearer", "refresh_token": refresh, "expires_in": int(as.ttl.Seconds())})
	})
	as.Server = httptest.NewServer(mux)
	t.Cleanup(as.Close)
	return as
}

func (as *AuthServer) Verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	as.Mu.Lock()
	defer as.Mu.Unlock()
	exp, ok := as.Valid[token]
	if !ok {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{Expiration: exp}, nil
}

// ProtectedServer is an MCP server (the go-sdk's) that takes only as's tokens.
func ProtectedServer(t testing.TB, as *AuthServer) string {
	return ProtectedBy(t, as.URL, as.Verify)
}

// ProtectedBy is an MCP server (the go-sdk's) whose protected resource metadata names the
// authorization server issuer, and that takes the tokens verify accepts.
func ProtectedBy(t testing.TB, issuer string, verify auth.TokenVerifier) string {
	srv := mcp.NewServer(&mcp.Implementation{Name: "hosted", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "hello", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}, nil, nil
		})
	mux := http.NewServeMux()
	var base string
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{Resource: base + "/mcp", AuthorizationServers: []string{issuer}}).ServeHTTP(w, r)
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{})(h))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	base = ts.URL
	return ts.URL + "/mcp"
}

// Browser follows the sign-in page's redirect to the loopback listener, as a person's
// browser does after they allowed access.
func Browser(opened *int) func(context.Context, string) error {
	return func(ctx context.Context, u string) error {
		*opened++
		req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}
}

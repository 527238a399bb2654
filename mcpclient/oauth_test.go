package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// authServer is a small OAuth authorization server: dynamic registration, the code flow
// (approving at once, as a person who clicked "allow"), and refresh tokens. Access tokens
// live ttl.
type authServer struct {
	*httptest.Server
	ttl time.Duration

	mu       sync.Mutex
	valid    map[string]time.Time // access token → expiry
	refresh  map[string]bool
	n        int
	grants   []string // the grant types of the token requests, in order
	verifier map[string]bool
}

func newAuthServer(t *testing.T, ttl time.Duration) *authServer {
	as := &authServer{ttl: ttl, valid: map[string]time.Time{}, refresh: map[string]bool{}}
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
		as.mu.Lock()
		defer as.mu.Unlock()
		grant := r.Form.Get("grant_type")
		as.grants = append(as.grants, grant)
		switch grant {
		case "authorization_code":
			if r.Form.Get("code") != "the-code" || r.Form.Get("code_verifier") == "" {
				http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
				return
			}
		case "refresh_token":
			if !as.refresh[r.Form.Get("refresh_token")] {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprint(w, `{"error":"invalid_grant"}`)
				return
			}
		}
		as.n++
		access, refresh := fmt.Sprintf("access-%d", as.n), fmt.Sprintf("refresh-%d", as.n)
		as.valid[access] = time.Now().Add(as.ttl)
		as.refresh[refresh] = true
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": access, "token_type": "Bearer", "refresh_token": refresh, "expires_in": int(as.ttl.Seconds())})
	})
	as.Server = httptest.NewServer(mux)
	t.Cleanup(as.Close)
	return as
}

func (as *authServer) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	as.mu.Lock()
	defer as.mu.Unlock()
	exp, ok := as.valid[token]
	if !ok {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{Expiration: exp}, nil
}

// protectedServer is an MCP server (the go-sdk's) that takes only as's tokens.
func protectedServer(t *testing.T, as *authServer) string {
	srv := mcp.NewServer(&mcp.Implementation{Name: "hosted", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "hello", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}, nil, nil
		})
	mux := http.NewServeMux()
	var base string
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{Resource: base + "/mcp", AuthorizationServers: []string{as.URL}}).ServeHTTP(w, r)
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	mux.Handle("/mcp", auth.RequireBearerToken(as.verify, &auth.RequireBearerTokenOptions{})(h))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	base = ts.URL
	return ts.URL + "/mcp"
}

// browser follows the sign-in page's redirect to the loopback listener, as a person's
// browser does after they allowed access.
func browser(t *testing.T, opened *int) func(context.Context, string) error {
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

// A hosted server that needs OAuth: with nobody to sign in, it waits in state "needs sign-in"
// with an error that says how; jean2 mcp login's flow (Connect with a SignIn) keeps a token
// 0600; a background connection then uses it, refreshes it when it expires and keeps the
// new one; a token the authorization server no longer honours brings "needs sign-in" back.
func TestOAuthSignInKeepAndRefresh(t *testing.T) {
	as := newAuthServer(t, 2*time.Second)
	url := protectedServer(t, as)
	home := t.TempDir()
	store := NewTokenStore(home)
	cfg := ServerConfig{Name: "hosted", URL: url, Type: "http", File: "mcp.json"}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	m := New(Config{Servers: []ServerConfig{cfg}}, nil, Options{Tokens: store, Logger: log, MinBackoff: 50 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m.Start(ctx)
	srv := m.Servers()[0]
	state, err := srv.Status()
	if state != StateNeedsSignIn || err == nil || !strings.Contains(err.Error(), "jean2 mcp login hosted") {
		t.Fatalf("before signing in: %s, %v", state, err)
	}

	opened := 0
	cs, closeFn, err := Connect(ctx, cfg, Options{Tokens: store, Logger: log, SignIn: &SignIn{Store: store, Open: browser(t, &opened)}})
	if err != nil {
		t.Fatalf("sign in: %v", err)
	}
	closeFn()
	_ = cs
	if opened != 1 || !store.HasToken(url) {
		t.Fatalf("sign-in page opened %d times, token kept: %v", opened, store.HasToken(url))
	}
	fi, err := os.Stat(store.path(url))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi.Mode(), err)
	}

	// The waiting server connects with the kept token at its next attempt.
	for {
		if st, _ := srv.Status(); st == StateConnected {
			break
		}
		if ctx.Err() != nil {
			st, err := srv.Status()
			t.Fatalf("after signing in: %s, %v", st, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	tools, _ := srv.Tools()
	if len(tools) != 1 {
		t.Fatalf("tools: %d", len(tools))
	}
	// Past the token's life, a new connection refreshes it and keeps the new one.
	time.Sleep(2500 * time.Millisecond)
	m2 := New(Config{Servers: []ServerConfig{cfg}}, nil, Options{Tokens: store, Logger: log})
	m2.Start(ctx)
	if st, err := m2.Servers()[0].Status(); st != StateConnected {
		t.Fatalf("after the token expired: %s, %v (grants %v)", st, err, as.grants)
	}
	m2.Close()
	rec, err := store.load(url)
	if err != nil || rec.Token.AccessToken == "access-1" || !strings.Contains(strings.Join(as.grants, ","), "refresh_token") {
		t.Fatalf("kept token %+v, %v; grants %v", rec.Token, err, as.grants)
	}

	// The authorization server revokes everything: back to "needs sign-in".
	as.mu.Lock()
	as.valid, as.refresh = map[string]time.Time{}, map[string]bool{}
	as.mu.Unlock()
	time.Sleep(2500 * time.Millisecond)
	m3 := New(Config{Servers: []ServerConfig{cfg}}, nil, Options{Tokens: store, Logger: log})
	m3.Start(ctx)
	defer m3.Close()
	if st, err := m3.Servers()[0].Status(); st != StateNeedsSignIn {
		t.Fatalf("after revocation: %s, %v", st, err)
	}
}

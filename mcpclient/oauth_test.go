package mcpclient

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/mcpclient/oauthtest"
)

// A hosted server that needs OAuth: with nobody to sign in, it waits in state "needs sign-in"
// with an error that says how; jean2 mcp login's flow (Connect with a SignIn) keeps a token
// 0600; a background connection then uses it, refreshes it when it expires and keeps the
// new one; a token the authorization server no longer honours brings "needs sign-in" back.
func TestOAuthSignInKeepAndRefresh(t *testing.T) {
	as := oauthtest.NewAuthServer(t, 2*time.Second)
	url := oauthtest.ProtectedServer(t, as)
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
	cs, closeFn, err := Connect(ctx, cfg, Options{Tokens: store, Logger: log, SignIn: &SignIn{Store: store, Open: oauthtest.Browser(&opened)}})
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
		t.Fatalf("after the token expired: %s, %v (grants %v)", st, err, as.Grants)
	}
	m2.Close()
	rec, err := store.load(url)
	if err != nil || rec.Token.AccessToken == "access-1" || !strings.Contains(strings.Join(as.Grants, ","), "refresh_token") {
		t.Fatalf("kept token %+v, %v; grants %v", rec.Token, err, as.Grants)
	}

	// The authorization server revokes everything: back to "needs sign-in".
	as.Mu.Lock()
	as.Valid, as.Refresh = map[string]time.Time{}, map[string]bool{}
	as.Mu.Unlock()
	time.Sleep(2500 * time.Millisecond)
	m3 := New(Config{Servers: []ServerConfig{cfg}}, nil, Options{Tokens: store, Logger: log})
	m3.Start(ctx)
	defer m3.Close()
	if st, err := m3.Servers()[0].Status(); st != StateNeedsSignIn {
		t.Fatalf("after revocation: %s, %v", st, err)
	}
}

// With nobody to sign in, a 401 or a 403 asking for more scopes means "needs sign-in"; a 403
// for any other reason is no sign-in's business and is reported as the refusal it is.
func TestStoredAuthRefusals(t *testing.T) {
	a := &storedAuth{url: "https://mcp.example.com/mcp"}
	resp := func(code int, challenge string) *http.Response {
		h := http.Header{}
		if challenge != "" {
			h.Set("WWW-Authenticate", challenge)
		}
		return &http.Response{StatusCode: code, Header: h, Body: io.NopCloser(strings.NewReader(""))}
	}
	if err := a.Authorize(context.Background(), nil, resp(401, `Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource"`)); !errors.Is(err, ErrSignInNeeded) || !strings.Contains(err.Error(), "no token is kept") {
		t.Errorf("401: %v", err)
	}
	if err := a.Authorize(context.Background(), nil, resp(403, `Bearer error="insufficient_scope", scope="repo"`)); !errors.Is(err, ErrSignInNeeded) {
		t.Errorf("403 insufficient_scope: %v", err)
	}
	if err := a.Authorize(context.Background(), nil, resp(403, "")); err != nil {
		t.Errorf("plain 403: %v, want it left to the request", err)
	}
}

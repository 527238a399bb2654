package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{"127.0.0.1": true, "::1": true, "[::1]": true, "localhost": true, "127.0.0.2": true,
		"0.0.0.0": false, "192.168.1.2": false, "example.com": false, "::": false} {
		if got := IsLoopback(host); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestTokenRequiredOnNonLoopbackBind(t *testing.T) {
	f := newFixture(t)
	f.tools = nil
	f.cfg.RequireToken = true
	f.start()
	tok, err := f.srv.EnsureToken(context.Background())
	if err != nil || !strings.HasPrefix(tok, "jean2_") {
		t.Fatalf("EnsureToken = %q, %v", tok, err)
	}
	if again, err := f.srv.EnsureToken(context.Background()); err != nil || again != "" {
		t.Fatalf("second EnsureToken = %q, %v; want none (shown once)", again, err)
	}

	// Open: health and the client. Closed: the API and /mcp.
	f.call("GET", "/api/health", nil, 200, nil)
	f.call("GET", "/", nil, 200, nil)
	for _, path := range []string{"/api/workspaces", "/api/tools", "/api/sessions/x/ws", "/mcp", "/api/providers"} {
		status, body := f.request("GET", path, nil, nil)
		if status != 401 || errorCode(t, body) != codeUnauthorized {
			t.Errorf("GET %s without a token: %d %s", path, status, body)
		}
	}
	bearer := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }
	if status, _ := f.request("GET", "/api/workspaces", nil, bearer("jean2_wrong")); status != 401 {
		t.Errorf("wrong token: %d", status)
	}
	if status, _ := f.request("GET", "/api/workspaces", nil, http.Header{"Authorization": {"Basic abc"}}); status != 401 {
		t.Errorf("basic auth: %d", status)
	}
	if status, body := f.request("GET", "/api/workspaces", nil, bearer(tok)); status != 200 {
		t.Errorf("with the token: %d %s", status, body)
	}
	if status, _ := f.request("POST", "/api/workspaces", map[string]any{"path": f.ws}, bearer(tok)); status != 201 {
		t.Errorf("POST with the token: %d", status)
	}

	// A browser signs in once through /auth and then uses the cookie.
	noRedirect := *f.ts.Client()
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := noRedirect.Get(f.ts.URL + "/auth?token=jean2_wrong")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || len(resp.Cookies()) != 0 {
		t.Errorf("/auth with a wrong token: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	resp, err = noRedirect.Get(f.ts.URL + "/auth?token=" + tok)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == TokenCookie {
			cookie = c
		}
	}
	if resp.StatusCode != http.StatusSeeOther || cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Fatalf("/auth: %d, cookie %+v", resp.StatusCode, cookie)
	}
	if status, _ := f.request("GET", "/api/workspaces", nil, http.Header{"Cookie": {cookie.String()}}); status != 200 {
		t.Errorf("with the cookie: %d", status)
	}
	// WebSockets: refused without the token, served with it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, resp, err = websocket.Dial(ctx, f.wsURL("/api/ws"), nil)
	if err == nil || resp == nil || resp.StatusCode != 401 {
		t.Errorf("socket without a token: %v %v", err, resp)
	}
	f.dial("/api/ws", bearer(tok)).close()
}

func TestCrossSiteRequestsRefused(t *testing.T) {
	f := newFixture(t)
	f.tools = nil
	f.start()
	evil := http.Header{"Origin": {"http://evil.example"}}
	status, body := f.request("POST", "/api/workspaces", map[string]any{"path": f.ws}, evil)
	if status != 403 || errorCode(t, body) != codeForbiddenOrig {
		t.Fatalf("cross-site POST: %d %s", status, body)
	}
	if status, _ := f.request("POST", "/api/workspaces", map[string]any{"path": f.ws}, http.Header{"Sec-Fetch-Site": {"cross-site"}}); status != 403 {
		t.Errorf("Sec-Fetch-Site cross-site: %d", status)
	}
	if status, _ := f.request("POST", "/api/workspaces", map[string]any{"path": f.ws}, http.Header{"Origin": {"null"}}); status != 403 {
		t.Errorf("Origin null: %d", status)
	}
	// Reading is allowed (the browser keeps the answer from the other site anyway).
	if status, _ := f.request("GET", "/api/workspaces", nil, evil); status != 200 {
		t.Errorf("cross-site GET: %d", status)
	}
	// The server's own pages pass.
	same := http.Header{"Origin": {f.ts.URL}, "Sec-Fetch-Site": {"same-origin"}}
	if status, body := f.request("POST", "/api/workspaces", map[string]any{"path": f.ws}, same); status != 201 {
		t.Errorf("same-origin POST: %d %s", status, body)
	}
	// A WebSocket from another site is refused.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, f.wsURL("/api/ws"), &websocket.DialOptions{HTTPHeader: evil})
	if err == nil || resp == nil || resp.StatusCode != 403 {
		t.Errorf("cross-site socket: %v %v", err, resp)
	}
	f.dial("/api/ws", http.Header{"Origin": {f.ts.URL}}).close()
}

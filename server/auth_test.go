package server

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

// Every API route, socket and /mcp needs the token, whatever the bind; a browser signs in
// once with a one-time code (or the token) and then holds it in an HttpOnly cookie.
func TestTokenEverywhere(t *testing.T) {
	f := newFixture(t)
	f.tools = nil
	f.start()
	tok := f.srv.Token()
	if !strings.HasPrefix(tok, "jean2_") {
		t.Fatalf("Token() = %q", tok)
	}
	if got, err := ReadTokenFile(f.home); err != nil || got != tok {
		t.Fatalf("ReadTokenFile = %q, %v; want the server's token", got, err)
	}

	// Open: health and the client. Closed: the API and /mcp.
	if status, _ := f.raw("GET", "/api/health", "", nil, nil); status != 200 {
		t.Errorf("health: %d", status)
	}
	if status, _ := f.raw("GET", "/", "", nil, nil); status != 200 {
		t.Errorf("/: %d", status)
	}
	for _, path := range []string{"/api/workspaces", "/api/tools", "/api/sessions/x/ws", "/mcp", "/api/providers", "/api/settings"} {
		status, body := f.raw("GET", path, "", nil, nil)
		if status != 401 || errorCode(t, body) != codeUnauthorized || !strings.Contains(string(body), "jean2 signin") {
			t.Errorf("GET %s without a token: %d %s", path, status, body)
		}
	}
	bearer := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }
	if status, _ := f.raw("GET", "/api/workspaces", "", nil, bearer("jean2_wrong")); status != 401 {
		t.Errorf("wrong token: %d", status)
	}
	if status, _ := f.raw("GET", "/api/workspaces", "", nil, http.Header{"Authorization": {"Basic abc"}}); status != 401 {
		t.Errorf("basic auth: %d", status)
	}
	if status, body := f.raw("GET", "/api/workspaces", "", nil, bearer(tok)); status != 200 {
		t.Errorf("with the token: %d %s", status, body)
	}
	// A token of the database (jean2 serve --new-token) works too.
	other, err := f.srv.NewToken(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if status, _ := f.raw("POST", "/api/workspaces", "", map[string]any{"path": f.ws}, bearer(other)); status != 201 {
		t.Errorf("POST with a database token: %d", status)
	}

	// A browser signs in through /auth and then uses the cookie.
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	signIn := func(query string) (int, *http.Cookie) {
		t.Helper()
		resp, err := noRedirect.Get(f.ts.URL + "/auth?" + query)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		for _, c := range resp.Cookies() {
			if c.Name == TokenCookie {
				if resp.Header.Get("Location") != "/" {
					t.Errorf("/auth?%s sends the browser to %q, want /", query, resp.Header.Get("Location"))
				}
				return resp.StatusCode, c
			}
		}
		return resp.StatusCode, nil
	}
	for _, q := range []string{"token=jean2_wrong", "code=made-up", "", "code="} {
		if status, c := signIn(q); status != 401 || c != nil {
			t.Errorf("/auth?%s: %d, cookie %v", q, status, c)
		}
	}
	// The one-time code: jean2 signin asks for one with the token.
	var code struct {
		Path string `json:"path"`
	}
	f.call("POST", "/api/auth/codes", map[string]any{}, 201, &code)
	if status, _ := f.raw("POST", "/api/auth/codes", "", map[string]any{}, nil); status != 401 {
		t.Errorf("a code without the token: %d", status)
	}
	query := strings.TrimPrefix(code.Path, "/auth?")
	status, cookie := signIn(query)
	if status != http.StatusSeeOther || cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Value != tok {
		t.Fatalf("/auth?%s: %d, cookie %+v", query, status, cookie)
	}
	if status, c := signIn(query); status != 401 || c != nil {
		t.Errorf("the same code again: %d, cookie %v", status, c)
	}
	url, err := f.srv.SignInURL(f.ts.URL)
	if err != nil || !strings.HasPrefix(url, f.ts.URL+"/auth?code=") {
		t.Fatalf("SignInURL = %q, %v", url, err)
	}
	if status, c := signIn(strings.TrimPrefix(url, f.ts.URL+"/auth?")); status != http.StatusSeeOther || c == nil {
		t.Errorf("SignInURL's code: %d", status)
	}
	// The token itself signs in too (a browser on another machine).
	if status, c := signIn("token=" + other); status != http.StatusSeeOther || c == nil || c.Value != other {
		t.Errorf("/auth?token=: %d %v", status, c)
	}
	if status, _ := f.raw("GET", "/api/workspaces", "", nil, http.Header{"Cookie": {cookie.String()}}); status != 200 {
		t.Errorf("with the cookie: %d", status)
	}
	// WebSockets: refused without the token, served with it or the cookie.
	if status := f.rawDial("/api/ws", "", nil); status != 401 {
		t.Errorf("socket without a token: %d", status)
	}
	f.dial("/api/ws", bearer(tok)).close()
	f.dial("/api/ws", http.Header{"Cookie": {cookie.String()}}).close()
}

// The token file: made 0600 at the first start, the same at the next, never through a link.
func TestTokenFile(t *testing.T) {
	home := t.TempDir()
	tok, err := EnsureTokenFile(home)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(home, TokenFile)
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v %v", path, fi, err)
	}
	if again, err := EnsureTokenFile(home); err != nil || again != tok {
		t.Fatalf("second EnsureTokenFile = %q, %v; want the same token", again, err)
	}
	if got, err := ReadTokenFile(home); err != nil || got != tok {
		t.Fatalf("ReadTokenFile = %q, %v", got, err)
	}
	// Widened by someone: narrowed again.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureTokenFile(home); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode after EnsureTokenFile: %v", fi.Mode().Perm())
	}

	// A link at the name (planted before the first start) is neither followed to write the
	// token elsewhere, nor read.
	elsewhere := filepath.Join(t.TempDir(), "stolen")
	linked := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(linked, TokenFile)); err != nil {
		t.Fatal(err)
	}
	if tok, err := EnsureTokenFile(linked); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("EnsureTokenFile over a link = %q, %v", tok, err)
	}
	if _, err := os.Lstat(elsewhere); !os.IsNotExist(err) {
		t.Errorf("the link's target was written: %v", err)
	}
	if err := os.WriteFile(elsewhere, []byte(tok), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadTokenFile(linked); err == nil {
		t.Errorf("ReadTokenFile through a link = %q", got)
	}
	// Not a token: refused rather than used.
	junk := t.TempDir()
	if err := os.WriteFile(filepath.Join(junk, TokenFile), []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureTokenFile(junk); err == nil {
		t.Error("EnsureTokenFile accepted a file that holds no token")
	}

	// Servers starting together agree on one token.
	race := t.TempDir()
	toks := make([]string, 8)
	var wg sync.WaitGroup
	for i := range toks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if toks[i], err = EnsureTokenFile(race); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for _, tk := range toks {
		if tk != toks[0] {
			t.Fatalf("concurrent EnsureTokenFile gave different tokens: %q", toks)
		}
	}
	entries, _ := os.ReadDir(race)
	if len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}
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
	// Reading is refused too, from another site and from another port of this machine (the
	// same site, which gets the cookie); the client's own page is not.
	for _, h := range []http.Header{evil, {"Sec-Fetch-Site": {"same-site"}}, {"Sec-Fetch-Site": {"cross-site"}}} {
		if status, body := f.request("GET", "/api/workspaces", nil, h); status != 403 || errorCode(t, body) != codeForbiddenOrig {
			t.Errorf("GET with %v: %d %s", h, status, body)
		}
	}
	if status, _ := f.raw("GET", "/", "", nil, http.Header{"Sec-Fetch-Site": {"cross-site"}}); status != 200 {
		t.Errorf("the client's page from a link on another site: %d", status)
	}
	if status, _ := f.request("GET", "/api/workspaces", nil, http.Header{"Sec-Fetch-Site": {"none"}}); status != 200 {
		t.Errorf("GET typed in the address bar: %d", status)
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

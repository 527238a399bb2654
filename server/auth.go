package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/jean2/jean2/store"
)

// TokenCookie is the cookie a browser keeps the API token in after visiting /auth?token=….
const TokenCookie = "jean2_token"

// tokenCookieAge is how long a browser keeps the token cookie.
const tokenCookieAge = 90 * 24 * time.Hour

// IsLoopback reports whether host (a --host value: a name or an address, no port) only
// accepts connections from this machine, so the API may go without a token.
func IsLoopback(host string) bool {
	h := strings.Trim(host, "[]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// guard is the auth and same-origin check in front of every route.
type guard struct {
	requireToken bool
	db           *store.DB
}

// open says whether path is served without a token: the web client's assets, the sign-in
// URL and the health check. The API and /mcp are not.
func open(path string) bool {
	if path == "/api/health" || path == "/auth" {
		return true
	}
	return !strings.HasPrefix(path, "/api/") && path != "/api" && path != "/mcp" && !strings.HasPrefix(path, "/mcp/")
}

// wrap applies the rules of docs/api.md#auth before next.
func (g *guard) wrap(next http.Handler, writeErr func(http.ResponseWriter, *http.Request, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (mutating(r.Method) || isUpgrade(r)) && !sameOrigin(r) {
			writeErr(w, r, errorf(http.StatusForbidden, codeForbiddenOrig,
				"a request that changes something must come from this server's own pages (Origin %q, Host %q)", r.Header.Get("Origin"), r.Host))
			return
		}
		if g.requireToken && !open(r.URL.Path) {
			if err := g.authenticate(r.Context(), r); err != nil {
				w.Header().Set("WWW-Authenticate", `Bearer realm="jean2"`)
				writeErr(w, r, err)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// authenticate checks the request's token: the Authorization header, else the cookie.
func (g *guard) authenticate(ctx context.Context, r *http.Request) error {
	secret := ""
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, rest, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return errorf(http.StatusUnauthorized, codeUnauthorized, "the Authorization header must be \"Bearer <token>\"")
		}
		secret = strings.TrimSpace(rest)
	} else if c, err := r.Cookie(TokenCookie); err == nil {
		secret = c.Value
	}
	if secret == "" {
		return errorf(http.StatusUnauthorized, codeUnauthorized,
			"this server needs an API token: send Authorization: Bearer <token>, or open /auth?token=<token> once in the browser (jean2 serve printed the token when it made it; jean2 serve --new-token makes another)")
	}
	if _, err := g.db.VerifyAuthToken(ctx, secret); err != nil {
		if errors.Is(err, store.ErrBadToken) {
			return errorf(http.StatusUnauthorized, codeUnauthorized, "the API token is not valid (jean2 serve --new-token makes a new one)")
		}
		return err
	}
	return nil
}

// signIn serves GET /auth?token=…: it checks the token, keeps it in a cookie and sends the
// browser to the client. On a loopback bind it only redirects.
func (g *guard) signIn(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return errorf(http.StatusMethodNotAllowed, codeMethod, "use GET /auth?token=…")
	}
	if g.requireToken {
		secret := r.URL.Query().Get("token")
		if secret == "" {
			return errorf(http.StatusUnauthorized, codeUnauthorized, "give the token: /auth?token=<token>")
		}
		if _, err := g.db.VerifyAuthToken(r.Context(), secret); err != nil {
			if errors.Is(err, store.ErrBadToken) {
				return errorf(http.StatusUnauthorized, codeUnauthorized, "the API token is not valid")
			}
			return err
		}
		http.SetCookie(w, &http.Cookie{
			Name: TokenCookie, Value: secret, Path: "/", HttpOnly: true, Secure: r.TLS != nil,
			SameSite: http.SameSiteStrictMode, MaxAge: int(tokenCookieAge / time.Second),
		})
	}
	// The token must not stay in the address bar or the history.
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, "/", http.StatusSeeOther)
	return nil
}

func mutating(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

func isUpgrade(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// sameOrigin reports whether r comes from this server's own pages or from a program that
// sends no Origin: a browser on another site always sends one (and Sec-Fetch-Site).
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false // includes the opaque "null" origin of sandboxed frames and files
	}
	return strings.EqualFold(u.Host, r.Host)
}

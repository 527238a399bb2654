package server

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	unix "github.com/jean2/jean2/internal/xunix"

	"github.com/jean2/jean2/store"
)

// TokenCookie is the cookie a browser keeps the API token in after signing in at /auth.
const TokenCookie = "jean2_token"

// TokenFile is the local API token's file in $JEAN2_HOME: made at the server's first start,
// read by jean2 chat and jean2 signin. No tool can read it: $JEAN2_HOME is protected from
// tool workers and refused as a workspace.
const TokenFile = "token"

// tokenCookieAge is how long a browser keeps the token cookie.
const tokenCookieAge = 90 * 24 * time.Hour

// signInCodeAge is how long a one-time sign-in code (/auth?code=…) stays valid, and
// maxSignInCodes how many may wait at once (the oldest is dropped).
const (
	signInCodeAge  = time.Hour
	maxSignInCodes = 16
)

// IsLoopback reports whether host (a --host value: a name or an address, no port) only
// accepts connections from this machine.
func IsLoopback(host string) bool {
	h := strings.Trim(host, "[]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// newSecret is a random token: jean2_ and 256 bits.
func newSecret() (string, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	return store.TokenPrefix + base64.RawURLEncoding.EncodeToString(raw[:]), nil
}

// EnsureTokenFile returns the local API token of $JEAN2_HOME (home), making the file when
// it is missing. It is made without ever following a link: the token is written to a new
// file (O_EXCL|O_NOFOLLOW, 0600) that is then hard-linked to its name, which fails rather
// than replace anything there, so a second server starting at the same time reads the
// first one's token instead. An existing file readable by others is narrowed to 0600.
func EnsureTokenFile(home string) (string, error) {
	path := filepath.Join(home, TokenFile)
	tok, err := readTokenFile(path, true)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return tok, err
	}
	secret, err := newSecret()
	if err != nil {
		return "", fmt.Errorf("make the API token %s: %w", path, err)
	}
	var suffix [8]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return "", fmt.Errorf("make the API token %s: %w", path, err)
	}
	tmp := fmt.Sprintf("%s.%x.new", path, suffix)
	fd, err := unix.Open(tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return "", fmt.Errorf("make the API token %s: %w", tmp, err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	defer os.Remove(tmp)
	if _, err := f.WriteString(secret + "\n"); err != nil {
		f.Close()
		return "", fmt.Errorf("write the API token %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return "", fmt.Errorf("write the API token %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("write the API token %s: %w", tmp, err)
	}
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return readTokenFile(path, true) // another server made it first
		}
		return "", fmt.Errorf("make the API token %s: %w", path, err)
	}
	return secret, nil
}

// ReadTokenFile reads the local API token of $JEAN2_HOME (home), for a client of a server
// on this machine. It never follows a link at the file's name.
func ReadTokenFile(home string) (string, error) {
	return readTokenFile(filepath.Join(home, TokenFile), false)
}

func readTokenFile(path string, narrow bool) (string, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return "", fmt.Errorf("the API token %s is a symbolic link; remove it, and jean2 serve makes a new token", path)
		}
		return "", &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("the API token %s is not a regular file; remove it, and jean2 serve makes a new token", path)
	}
	if narrow && fi.Mode().Perm()&0o077 != 0 {
		if err := f.Chmod(0o600); err != nil {
			return "", fmt.Errorf("the API token %s is readable by others (%v) and could not be made 0600: %w", path, fi.Mode().Perm(), err)
		}
	}
	data, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return "", fmt.Errorf("read the API token %s: %w", path, err)
	}
	tok := strings.TrimSpace(string(data))
	if !strings.HasPrefix(tok, store.TokenPrefix) || len(tok) < len(store.TokenPrefix)+32 {
		return "", fmt.Errorf("the API token %s does not hold a token; remove it, and jean2 serve makes a new one", path)
	}
	return tok, nil
}

// guard is what stands in front of every route: the Host allow-list, the same-origin check
// and the token.
type guard struct {
	token string // the local token of $JEAN2_HOME/token
	db    *store.DB
	hosts []string // names allowed as Host besides localhost and IP addresses, lower-case

	mu    sync.Mutex
	codes map[string]time.Time // one-time sign-in codes → when each expires
}

func newGuard(token string, db *store.DB, allowed []string) *guard {
	g := &guard{token: token, db: db, codes: map[string]time.Time{}}
	for _, h := range allowed {
		if h = normalHost(h); h != "" {
			g.hosts = append(g.hosts, h)
		}
	}
	return g
}

// open says whether path is served without a token: the web client's assets, the sign-in
// URL and the health check. The API and /mcp are not.
func open(path string) bool {
	if path == "/api/health" || path == "/auth" {
		return true
	}
	return !strings.HasPrefix(path, "/api/") && path != "/api" && path != "/mcp" && !strings.HasPrefix(path, "/mcp/")
}

// wrap applies the rules of docs/api.md#auth before next, in this order: the Host (every
// route: DNS rebinding), the origin of a change or an upgrade, then the token.
func (g *guard) wrap(next http.Handler, writeErr func(http.ResponseWriter, *http.Request, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.hostAllowed(r.Host) {
			writeErr(w, r, errorf(http.StatusForbidden, codeForbiddenHost,
				"this server does not answer to the name %q: a web page whose name was pointed at this machine (DNS rebinding) must not reach it. "+
					"Use http://127.0.0.1 or http://localhost, or start jean2 serve with --allowed-host %s if that name is yours", r.Host, hostOnly(r.Host)))
			return
		}
		// Reads too, on every route behind the token: a page on another port of this
		// machine (one a tool serves, say) is same-site, so the browser sends it the
		// SameSite=Strict cookie; CORS keeps the answer from it, but the server should not
		// act for it at all.
		if (mutating(r.Method) || isUpgrade(r) || !open(r.URL.Path)) && !sameOrigin(r) {
			writeErr(w, r, errorf(http.StatusForbidden, codeForbiddenOrig,
				"the API answers only this server's own pages and programs (Origin %q, Sec-Fetch-Site %q, Host %q)",
				r.Header.Get("Origin"), r.Header.Get("Sec-Fetch-Site"), r.Host))
			return
		}
		if !open(r.URL.Path) {
			if err := g.authenticate(r.Context(), r); err != nil {
				w.Header().Set("WWW-Authenticate", `Bearer realm="jean2"`)
				writeErr(w, r, err)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// hostOnly is the name of a Host header without its port.
func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

// normalHost lower-cases a name and drops brackets, a trailing dot and a port.
func normalHost(h string) string {
	h = strings.ToLower(strings.TrimSpace(hostOnly(strings.TrimSpace(h))))
	return strings.TrimSuffix(strings.Trim(h, "[]"), ".")
}

// hostAllowed says whether a request's Host is one this server answers to: localhost, an
// IP address (a page can only rebind a name: a page whose origin is an address talks to
// that address), or a name the person allowed.
func (g *guard) hostAllowed(hostport string) bool {
	h := normalHost(hostport)
	if h == "" {
		return false
	}
	if h == "localhost" || net.ParseIP(h) != nil {
		return true
	}
	for _, a := range g.hosts {
		if h == a {
			return true
		}
	}
	return false
}

// secret is the token a request carries: the Authorization header, else the cookie.
func secret(r *http.Request) (string, error) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, rest, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return "", errorf(http.StatusUnauthorized, codeUnauthorized, "the Authorization header must be \"Bearer <token>\"")
		}
		return strings.TrimSpace(rest), nil
	}
	if c, err := r.Cookie(TokenCookie); err == nil {
		return c.Value, nil
	}
	return "", nil
}

// authenticate checks the request's token against the local token, then the tokens kept
// in the database (jean2 serve --new-token).
func (g *guard) authenticate(ctx context.Context, r *http.Request) error {
	s, err := secret(r)
	if err != nil {
		return err
	}
	if s == "" {
		return errorf(http.StatusUnauthorized, codeUnauthorized,
			"this server needs its API token: open the sign-in address jean2 serve printed, or run jean2 signin; "+
				"programs send Authorization: Bearer <token> (the token is in $JEAN2_HOME/token; jean2 chat reads it, or JEAN2_TOKEN)")
	}
	return g.check(ctx, s)
}

// check says whether s is a token of this server.
func (g *guard) check(ctx context.Context, s string) error {
	if g.token != "" && subtle.ConstantTimeCompare([]byte(s), []byte(g.token)) == 1 {
		return nil
	}
	if _, err := g.db.VerifyAuthToken(ctx, s); err != nil {
		if errors.Is(err, store.ErrBadToken) {
			return errorf(http.StatusUnauthorized, codeUnauthorized,
				"the API token is not this server's: jean2 signin prints a sign-in address, and $JEAN2_HOME/token holds the token")
		}
		return err
	}
	return nil
}

// newCode makes a one-time sign-in code.
func (g *guard) newCode() (string, time.Time, error) {
	var raw [24]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", time.Time{}, err
	}
	code := base64.RawURLEncoding.EncodeToString(raw[:])
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	for c, exp := range g.codes {
		if now.After(exp) {
			delete(g.codes, c)
		}
	}
	for len(g.codes) >= maxSignInCodes {
		oldest := ""
		for c, exp := range g.codes {
			if oldest == "" || exp.Before(g.codes[oldest]) {
				oldest = c
			}
		}
		delete(g.codes, oldest)
	}
	exp := now.Add(signInCodeAge)
	g.codes[code] = exp
	return code, exp, nil
}

// useCode spends a sign-in code: true once for each code made, within its age.
func (g *guard) useCode(code string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	exp, ok := g.codes[code]
	if !ok {
		return false
	}
	delete(g.codes, code)
	return time.Now().Before(exp)
}

// signIn serves GET /auth?code=… (a one-time code: jean2 serve and jean2 signin print one)
// and GET /auth?token=… (the token itself, or one of jean2 serve --new-token): it keeps the
// token in a cookie and sends the browser to the client, so neither stays in the address bar.
// A browser whose code fails is sent to the client's sign-in page, which says why.
func (g *guard) signIn(w http.ResponseWriter, r *http.Request) error {
	err := g.signInOnce(w, r)
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized && strings.Contains(r.Header.Get("Accept"), "text/html") {
		http.Redirect(w, r, "/#signin-failed", http.StatusSeeOther)
		return nil
	}
	return err
}

func (g *guard) signInOnce(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return errorf(http.StatusMethodNotAllowed, codeMethod, "use GET /auth?code=…")
	}
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Cache-Control", "no-store")
	q := r.URL.Query()
	cookie := ""
	switch {
	case q.Get("code") != "":
		if !g.useCode(q.Get("code")) {
			return errorf(http.StatusUnauthorized, codeUnauthorized,
				"this sign-in address was used already or is older than an hour: run jean2 signin for a new one")
		}
		cookie = g.token
	case q.Get("token") != "":
		if err := g.check(r.Context(), q.Get("token")); err != nil {
			return err
		}
		cookie = q.Get("token")
	default:
		return errorf(http.StatusUnauthorized, codeUnauthorized, "give a sign-in code: run jean2 signin, and open the address it prints")
	}
	http.SetCookie(w, &http.Cookie{
		Name: TokenCookie, Value: cookie, Path: "/", HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode, MaxAge: int(tokenCookieAge / time.Second),
	})
	http.Redirect(w, r, "/", http.StatusSeeOther)
	return nil
}

// SignInURL makes a one-time sign-in address on base (http://host:port): opened in a
// browser within an hour, it signs that browser in.
func (s *Server) SignInURL(base string) (string, error) {
	code, _, err := s.guard.newCode()
	if err != nil {
		return "", fmt.Errorf("make a sign-in code: %w", err)
	}
	return strings.TrimRight(base, "/") + "/auth?code=" + url.QueryEscape(code), nil
}

// postSignIn serves POST /api/auth/codes: a new one-time sign-in code for jean2 signin.
func (s *Server) postSignIn(w http.ResponseWriter, r *http.Request) error {
	code, exp, err := s.guard.newCode()
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"path": "/auth?code=" + url.QueryEscape(code), "expiresAt": exp.UTC()})
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

package mcpclient

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// OAuthConfig is the "oauth" object of an HTTP server's mcp.json entry: how jean2 identifies
// itself to the server's authorization server. Without one, jean2 registers itself
// dynamically (RFC 7591) when the authorization server allows it.
type OAuthConfig struct {
	// ClientID and ClientSecret of a client registered beforehand with the authorization
	// server (${NAME} references are expanded). Used when the server offers no client ID
	// metadata documents.
	ClientID     string `json:"clientId,omitempty"`
	ClientSecret string `json:"clientSecret,omitempty"`
	// ClientMetadataURL is the https URL of a client ID metadata document describing jean2
	// (SEP-991), used as the client ID when the authorization server supports them.
	ClientMetadataURL string `json:"clientMetadataUrl,omitempty"`
	// Grant is "client_credentials" for machine sign-in (machineauth.go): no person, the
	// client proves itself with ClientSecret or a private key. Empty: a person signs in
	// (the authorization code flow).
	Grant string `json:"grant,omitempty"`
	// PrivateKey (PEM, usually "${NAME}") or PrivateKeyFile is the key of a client that
	// authenticates with a signed JWT (private_key_jwt) instead of a secret;
	// SigningAlgorithm is the JWT's (default: the key's usual one, e.g. ES256, RS256).
	PrivateKey       string `json:"privateKey,omitempty"`
	PrivateKeyFile   string `json:"privateKeyFile,omitempty"`
	SigningAlgorithm string `json:"signingAlgorithm,omitempty"`
}

// OAuthDir is the folder under $JEAN2_HOME that keeps the tokens of MCP servers (0700, files
// 0600). Tool workers cannot reach $JEAN2_HOME (docs/security.md).
const OAuthDir = "mcp-oauth"

// ErrSignInNeeded is why a server that asks for OAuth is not connected while nobody is
// there to sign in (jean2 serve, tools run): `jean2 mcp login NAME` or the web client's
// Connect button signs in, and the next attempt uses the token.
var ErrSignInNeeded = errors.New("the server needs you to sign in")

// TokenStore keeps MCP servers' OAuth tokens and client registrations, one file per server
// URL under Dir.
type TokenStore struct{ Dir string }

// NewTokenStore is the store of $JEAN2_HOME (home).
func NewTokenStore(home string) *TokenStore { return &TokenStore{Dir: filepath.Join(home, OAuthDir)} }

// tokenRecord is what is kept for one server: enough to refresh the token without the
// person (the client's registration and the token endpoint) and the token itself.
type tokenRecord struct {
	URL          string        `json:"url"`
	ClientID     string        `json:"clientId"`
	ClientSecret string        `json:"clientSecret,omitempty"`
	AuthURL      string        `json:"authUrl"`
	TokenURL     string        `json:"tokenUrl"`
	AuthStyle    int           `json:"authStyle"`
	Scopes       []string      `json:"scopes,omitempty"`
	Token        *oauth2.Token `json:"token"`
	Saved        time.Time     `json:"saved"`
}

func (st *TokenStore) path(serverURL string) string {
	sum := sha256.Sum256([]byte(serverURL))
	return filepath.Join(st.Dir, hex.EncodeToString(sum[:12])+".json")
}

// load returns the record of serverURL, nil when there is none.
func (st *TokenStore) load(serverURL string) (*tokenRecord, error) {
	data, err := os.ReadFile(st.path(serverURL))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the token of %s: %w", serverURL, err)
	}
	var rec tokenRecord
	if err := json.Unmarshal(data, &rec); err != nil || rec.Token == nil || rec.URL != serverURL {
		return nil, fmt.Errorf("the token file %s is damaged: sign in again (jean2 mcp login)", st.path(serverURL))
	}
	return &rec, nil
}

// save writes rec atomically, readable by its owner only.
func (st *TokenStore) save(rec *tokenRecord) error {
	if err := os.MkdirAll(st.Dir, 0o700); err != nil {
		return fmt.Errorf("keep the token of %s: %w", rec.URL, err)
	}
	_ = os.Chmod(st.Dir, 0o700)
	rec.Saved = time.Now().UTC()
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(st.Dir, ".token-*")
	if err != nil {
		return fmt.Errorf("keep the token of %s: %w", rec.URL, err)
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("keep the token of %s: %w", rec.URL, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), st.path(rec.URL))
}

// Forget deletes the token of serverURL (sign out).
func (st *TokenStore) Forget(serverURL string) error {
	err := os.Remove(st.path(serverURL))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// HasToken reports whether a token is kept for serverURL.
func (st *TokenStore) HasToken(serverURL string) bool {
	rec, err := st.load(serverURL)
	return err == nil && rec != nil
}

// savingSource hands out rec's token, refreshing it through the authorization server when
// it expires, and writes every new token back to the store.
type savingSource struct {
	st   *TokenStore
	mu   sync.Mutex
	rec  *tokenRecord
	next oauth2.TokenSource
}

func newSavingSource(st *TokenStore, rec *tokenRecord, client *http.Client) *savingSource {
	cfg := rec.oauth2Config()
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, client)
	return &savingSource{st: st, rec: rec, next: cfg.TokenSource(ctx, rec.Token)}
}

func (r *tokenRecord) oauth2Config() *oauth2.Config {
	return &oauth2.Config{
		ClientID: r.ClientID, ClientSecret: r.ClientSecret, Scopes: r.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: r.AuthURL, TokenURL: r.TokenURL, AuthStyle: oauth2.AuthStyle(r.AuthStyle)},
	}
}

func (s *savingSource) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tok, err := s.next.Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) || errors.Is(err, context.Canceled) {
			return nil, fmt.Errorf("%w: the token of %s expired and could not be refreshed (%v)", ErrSignInNeeded, s.rec.URL, err)
		}
		return nil, fmt.Errorf("refresh the token of %s: %w", s.rec.URL, err)
	}
	if tok.AccessToken != s.rec.Token.AccessToken {
		rec := *s.rec
		rec.Token = tok
		if tok.RefreshToken == "" {
			rec.Token.RefreshToken = s.rec.Token.RefreshToken
		}
		if err := s.st.save(&rec); err != nil {
			return nil, err
		}
		s.rec = &rec
	}
	return tok, nil
}

// storedAuth is the OAuth handler of a server connected with nobody to sign in: it sends
// the kept token (refreshed when it expires) and, when the server asks for another sign-in
// (no token, a token refused, more scopes), fails with ErrSignInNeeded.
type storedAuth struct {
	url string
	ts  oauth2.TokenSource // nil: no token kept
}

func (a *storedAuth) TokenSource(context.Context) (oauth2.TokenSource, error) { return a.ts, nil }

func (a *storedAuth) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusForbidden && !insufficientScope(resp.Header) {
		// A refusal that no sign-in changes (as the go-sdk's own handler treats it): the
		// request is tried once more and its 403 reported as the error it is.
		return nil
	}
	why := "it refused the request"
	switch {
	case a.ts == nil:
		why = "no token is kept for it"
	case resp.StatusCode == http.StatusForbidden:
		why = "it asks for more permissions (scopes) than the kept token has"
	case resp.StatusCode == http.StatusUnauthorized:
		why = "it refused the kept token"
	}
	return fmt.Errorf("%w (%s, HTTP %d)", ErrSignInNeeded, why, resp.StatusCode)
}

// insufficientScope reports whether a 403's challenge asks for more scopes (step-up).
func insufficientScope(h http.Header) bool {
	cs, err := oauthex.ParseWWWAuthenticate(h.Values("WWW-Authenticate"))
	if err != nil {
		return false
	}
	for _, c := range cs {
		if c.Params["error"] == "insufficient_scope" {
			return true
		}
	}
	return false
}

// backgroundAuth is the handler of a server connected by jean2 serve or a command: the kept
// token, no interactive sign-in.
func backgroundAuth(st *TokenStore, serverURL string, client *http.Client) (*storedAuth, error) {
	rec, err := st.load(serverURL)
	if err != nil {
		return nil, err
	}
	a := &storedAuth{url: serverURL}
	if rec != nil {
		a.ts = newSavingSource(st, rec, client)
	}
	return a, nil
}

// SignIn runs the authorization code flow with PKCE for one server: protected resource and
// authorization server metadata discovery, client ID metadata document, pre-registered or
// dynamically registered client, scopes from WWW-Authenticate (step-up adds to what was
// granted), a refresh token when the server offers one. Open shows the person the
// authorization URL (a browser, or the URL printed); the answer comes back to a loopback
// listener. The token is kept in the store.
type SignIn struct {
	Store *TokenStore
	// Open shows url to the person: a browser, or the URL printed for them to open.
	Open func(ctx context.Context, url string) error
	// Getenv expands ${NAME} in the oauth config (os.Getenv when nil).
	Getenv func(string) string
	// Client makes the HTTP requests of the flow (when nil, one that keeps a public
	// server's sign-in off local and private addresses: oauthClient).
	Client *http.Client
}

// Handler returns an OAuth handler for cfg that signs in interactively when the server asks,
// starting from the token kept for it; close ends its loopback listener.
func (si *SignIn) Handler(cfg ServerConfig) (_ auth.OAuthHandler, closeFn func(), _ error) {
	getenv := si.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	client := oauthClient(cfg.URL, si.Client)
	lb, err := newLoopback()
	if err != nil {
		return nil, nil, err
	}
	hc := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: lb.redirect,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			return lb.fetch(ctx, args.URL, si.Open)
		},
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName:   "jean2",
			RedirectURIs: []string{lb.redirect},
			GrantTypes:   []string{"authorization_code", "refresh_token"},
		}},
		RequestRefreshToken: true,
		Client:              client,
		NewTokenSource: func(ctx context.Context, oc *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			rec := &tokenRecord{
				URL: cfg.URL, ClientID: oc.ClientID, ClientSecret: oc.ClientSecret,
				AuthURL: oc.Endpoint.AuthURL, TokenURL: oc.Endpoint.TokenURL, AuthStyle: int(oc.Endpoint.AuthStyle),
				Scopes: oc.Scopes, Token: tok,
			}
			if err := si.Store.save(rec); err != nil {
				return nil, err
			}
			return newSavingSource(si.Store, rec, client), nil
		},
	}
	if o := cfg.OAuth; o != nil {
		if o.ClientMetadataURL != "" {
			hc.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: expand(o.ClientMetadataURL, getenv)}
		}
		if id := expand(o.ClientID, getenv); id != "" {
			pre := &oauthex.ClientCredentials{ClientID: id}
			if secret := expand(o.ClientSecret, getenv); secret != "" {
				pre.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: secret}
			}
			hc.PreregisteredClient = pre
		}
	}
	if rec, err := si.Store.load(cfg.URL); err == nil && rec != nil {
		hc.InitialTokenSource = newSavingSource(si.Store, rec, client)
	}
	h, err := auth.NewAuthorizationCodeHandler(hc)
	if err != nil {
		lb.close()
		return nil, nil, fmt.Errorf("MCP server %s: oauth: %w", cfg.Name, err)
	}
	return h, lb.close, nil
}

// loopback receives the authorization server's redirect on 127.0.0.1 (RFC 8252 §7.3).
type loopback struct {
	srv      *http.Server
	redirect string
	results  chan *auth.AuthorizationResult
}

func newLoopback() (*loopback, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen on loopback for the sign-in's answer: %w", err)
	}
	lb := &loopback{
		redirect: fmt.Sprintf("http://127.0.0.1:%d/callback", ln.Addr().(*net.TCPAddr).Port),
		results:  make(chan *auth.AuthorizationResult, 1),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /callback", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if e := q.Get("error"); e != "" {
			msg := strings.TrimSpace(e + " " + q.Get("error_description"))
			fmt.Fprintf(w, "<p>jean2: the sign-in failed: %s. You can close this tab.</p>", html.EscapeString(msg))
			select {
			case lb.results <- &auth.AuthorizationResult{State: q.Get("state"), Code: "", Iss: "error: " + msg}:
			default:
			}
			return
		}
		fmt.Fprint(w, "<p>jean2: signed in. You can close this tab.</p>")
		select {
		case lb.results <- &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}:
		default:
		}
	})
	lb.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = lb.srv.Serve(ln) }()
	return lb, nil
}

// fetch shows url and waits for the redirect (or ctx).
func (lb *loopback) fetch(ctx context.Context, url string, open func(context.Context, string) error) (*auth.AuthorizationResult, error) {
	// A result left by an earlier, abandoned attempt is not this one's.
	select {
	case <-lb.results:
	default:
	}
	if open == nil {
		return nil, ErrSignInNeeded
	}
	if err := open(ctx, url); err != nil {
		return nil, fmt.Errorf("open the sign-in page: %w", err)
	}
	select {
	case res := <-lb.results:
		if res.Code == "" {
			return nil, fmt.Errorf("sign-in refused by the authorization server: %s", strings.TrimPrefix(res.Iss, "error: "))
		}
		return res, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the sign-in at %s: %w", lb.redirect, ctx.Err())
	}
}

func (lb *loopback) close() { _ = lb.srv.Close() }

// Connect makes one connection to cfg the way a Manager's servers connect (transport,
// headers, OAuth, handlers) and lists its tools: jean2 mcp probe and login use it. close
// disconnects and ends the sign-in listener.
func Connect(ctx context.Context, cfg ServerConfig, opts Options) (cs *mcp.ClientSession, closeFn func(), err error) {
	m := New(Config{Servers: []ServerConfig{cfg}}, nil, opts)
	s := m.servers[0]
	if err := s.connect(ctx); err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	cs = s.session
	s.mu.Unlock()
	return cs, func() { _ = cs.Close(); s.endAuth() }, nil
}

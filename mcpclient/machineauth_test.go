package mcpclient

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/jean2/jean2/mcpclient/oauthtest"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// machineAS is an authorization server that only grants client_credentials, to a client
// proving itself with a secret (client_secret_basic) or a JWT signed by its key.
type machineAS struct {
	*httptest.Server
	pub        *ecdsa.PublicKey // set: private_key_jwt; nil: client_secret_basic
	mu         sync.Mutex
	valid      map[string]bool
	assertions map[string]bool // the jti of every assertion seen
	refusals   []string
}

func newMachineAS(t *testing.T, pub *ecdsa.PublicKey) *machineAS {
	as := &machineAS{pub: pub, valid: map[string]bool{}, assertions: map[string]bool{}}
	method := "client_secret_basic"
	if pub != nil {
		method = "private_key_jwt"
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": as.URL, "token_endpoint": as.URL + "/token", "response_types_supported": []string{"token"},
			"grant_types_supported": []string{"client_credentials"}, "token_endpoint_auth_methods_supported": []string{method},
			// The go-sdk reads no metadata without PKCE, although this grant does not use it.
			"code_challenge_methods_supported": []string{"S256"},
		})
	})
	mux.HandleFunc("POST /token", as.token)
	as.Server = httptest.NewServer(mux)
	t.Cleanup(as.Close)
	return as
}

func (as *machineAS) token(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	as.mu.Lock()
	defer as.mu.Unlock()
	if why := as.refusal(r); why != "" {
		as.refusals = append(as.refusals, why)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":"invalid_client","error_description":%q}`, why)
		return
	}
	tok := fmt.Sprintf("machine-%d", len(as.valid)+1)
	as.valid[tok] = true
	w.Header().Set("Content-Type", "application/json")
	// A token that lives a second: every request after the first needs a new one.
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 1})
}

// refusal is why a token request is refused ("" if it is not).
func (as *machineAS) refusal(r *http.Request) string {
	if g := r.Form.Get("grant_type"); g != "client_credentials" {
		return "grant " + g
	}
	if as.pub == nil {
		id, secret, ok := r.BasicAuth()
		if !ok || id != "ci-bot" || secret != "s3cret" {
			return "bad basic credentials"
		}
		return ""
	}
	if r.Form.Get("client_assertion_type") != jwtAssertionType {
		return "assertion type " + r.Form.Get("client_assertion_type")
	}
	var claims jwt.RegisteredClaims
	_, err := jwt.ParseWithClaims(r.Form.Get("client_assertion"), &claims, func(*jwt.Token) (any, error) { return as.pub, nil },
		jwt.WithValidMethods([]string{"ES256"}), jwt.WithAudience(as.URL), jwt.WithIssuer("ci-bot"), jwt.WithSubject("ci-bot"), jwt.WithExpirationRequired())
	if err != nil {
		return "assertion: " + err.Error()
	}
	if as.assertions[claims.ID] {
		return "assertion replayed"
	}
	as.assertions[claims.ID] = true
	return ""
}

func (as *machineAS) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	as.mu.Lock()
	defer as.mu.Unlock()
	if !as.valid[token] {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{Expiration: time.Now().Add(time.Minute)}, nil
}

// A server that wants OAuth is reached with no person present when its entry says grant
// "client_credentials": jean2 serve's manager (no sign-in, nobody to ask) connects, lists
// and calls, with a secret sent as HTTP basic or with a JWT signed by the client's key,
// and asks for a new token when one expires (a new, unreplayed assertion each time).
func TestClientCredentialsSignIn(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	keyFile := filepath.Join(t.TempDir(), "ci.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"CI_SECRET": "s3cret"}
	for _, c := range []struct {
		name  string
		pub   *ecdsa.PublicKey
		oauth OAuthConfig
	}{
		{"basic", nil, OAuthConfig{Grant: GrantClientCredentials, ClientID: "ci-bot", ClientSecret: "${CI_SECRET}"}},
		{"jwt", &key.PublicKey, OAuthConfig{Grant: GrantClientCredentials, ClientID: "ci-bot", PrivateKeyFile: keyFile}},
	} {
		t.Run(c.name, func(t *testing.T) {
			as := newMachineAS(t, c.pub)
			cfg := ServerConfig{Name: "hosted", URL: oauthtest.ProtectedBy(t, as.URL, as.verify), Type: "http", File: "mcp.json", OAuth: &c.oauth}
			if err := cfg.Check(); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			m := New(Config{Servers: []ServerConfig{cfg}}, nil, Options{
				Tokens: NewTokenStore(t.TempDir()), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
				Getenv: func(k string) string { return env[k] },
			})
			defer m.Close()
			m.Start(ctx)
			srv := m.Servers()[0]
			if st, err := srv.Status(); st != StateConnected {
				t.Fatalf("state %s, %v (refusals %v)", st, err, as.refusals)
			}
			time.Sleep(1100 * time.Millisecond) // the token has expired
			if _, err := srv.Catalog(ctx); err != nil {
				t.Fatalf("a request after the token expired: %v (refusals %v)", err, as.refusals)
			}
			as.mu.Lock()
			defer as.mu.Unlock()
			if len(as.refusals) > 0 || len(as.valid) < 2 {
				t.Fatalf("tokens granted %d, refusals %v", len(as.valid), as.refusals)
			}
			if c.pub != nil && len(as.assertions) != len(as.valid) {
				t.Fatalf("%d assertions for %d tokens", len(as.assertions), len(as.valid))
			}
		})
	}
}

// A wrong secret is reported as the token request's refusal, not as "needs sign-in":
// nobody signing in would change it.
func TestClientCredentialsRefusedIsSaid(t *testing.T) {
	as := newMachineAS(t, nil)
	cfg := ServerConfig{Name: "hosted", URL: oauthtest.ProtectedBy(t, as.URL, as.verify), Type: "http", File: "mcp.json",
		OAuth: &OAuthConfig{Grant: GrantClientCredentials, ClientID: "ci-bot", ClientSecret: "wrong"}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m := New(Config{Servers: []ServerConfig{cfg}}, nil, Options{Tokens: NewTokenStore(t.TempDir()), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer m.Close()
	m.Start(ctx)
	st, err := m.Servers()[0].Status()
	if st == StateConnected || st == StateNeedsSignIn || err == nil || !strings.Contains(err.Error(), "client credentials token request") || !strings.Contains(err.Error(), "invalid_client") {
		t.Fatalf("state %s, %v", st, err)
	}
}

func TestClientCredentialsConfigChecks(t *testing.T) {
	for _, c := range []struct {
		o    OAuthConfig
		want string
	}{
		{OAuthConfig{Grant: "client_credentials", ClientSecret: "x"}, "needs the clientId"},
		{OAuthConfig{Grant: "client_credentials", ClientID: "a"}, "exactly one"},
		{OAuthConfig{Grant: "client_credentials", ClientID: "a", ClientSecret: "x", PrivateKeyFile: "k.pem"}, "exactly one"},
		{OAuthConfig{Grant: "client_credentials", ClientID: "a", PrivateKey: "p", PrivateKeyFile: "k.pem"}, "not both"},
		{OAuthConfig{Grant: "client_credentials", ClientID: "a", PrivateKey: "p", SigningAlgorithm: "HS256x"}, "not one jean2 signs with"},
		{OAuthConfig{Grant: "password", ClientID: "a"}, `grant "password"`},
		{OAuthConfig{ClientID: "a", PrivateKeyFile: "k.pem"}, "private key is for grant"},
	} {
		cfg := ServerConfig{Name: "s", URL: "https://example.com/mcp", Type: "http", OAuth: &c.o}
		if err := cfg.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
	if _, _, err := parseSigningKey("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", ""); err == nil {
		t.Error("a broken key was taken")
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalECPrivateKey(key)
	text := string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
	if _, alg, err := parseSigningKey(text, ""); err != nil || alg != "ES256" {
		t.Errorf("EC key: %s, %v", alg, err)
	}
	if _, _, err := parseSigningKey(text, "RS256"); err == nil || !strings.Contains(err.Error(), "use ES256") {
		t.Errorf("RS256 with an EC key: %v", err)
	}
}

package mcpclient

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// Machine sign-in: the OAuth client credentials grant (RFC 6749 §4.4, MCP's SEP-1046
// extension), for a server reached with no person present — a CI job, a schedule, jean2
// serve on a host nobody watches. The client is registered beforehand and proves itself
// with its secret (client_secret_basic or _post) or with a JWT signed by its private key
// (private_key_jwt, RFC 7523 §2.2). Nothing is kept: a new token is asked for whenever the
// last one expires or is refused, so there is no sign-in to lose.

// GrantClientCredentials is OAuthConfig.Grant for machine sign-in.
const GrantClientCredentials = "client_credentials"

// jwtAssertionType is client_assertion_type for a JWT (RFC 7523 §2.2).
const jwtAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// checkMachine checks the fields of a client credentials config.
func (o *OAuthConfig) checkMachine() error {
	if o.ClientID == "" {
		return fmt.Errorf(`oauth: grant "client_credentials" needs the clientId registered with the authorization server`)
	}
	key := o.PrivateKey != "" || o.PrivateKeyFile != ""
	switch {
	case o.PrivateKey != "" && o.PrivateKeyFile != "":
		return fmt.Errorf("oauth: give privateKey or privateKeyFile, not both")
	case key == (o.ClientSecret != ""):
		return fmt.Errorf(`oauth: grant "client_credentials" needs either clientSecret or a private key (privateKey or privateKeyFile), exactly one`)
	case o.ClientMetadataURL != "":
		return fmt.Errorf(`oauth: clientMetadataUrl is for signing in as a person, not with grant "client_credentials"`)
	}
	if a := o.SigningAlgorithm; a != "" && jwt.GetSigningMethod(a) == nil {
		return fmt.Errorf("oauth: signingAlgorithm %q is not one jean2 signs with (ES256, ES384, ES512, RS256, PS256, EdDSA …)", a)
	}
	return nil
}

// machineAuth is the OAuth handler of a server signed in to with client credentials.
type machineAuth struct {
	server string
	client *http.Client
	id     string
	secret string
	key    any // the private key of private_key_jwt; nil with a secret
	alg    string

	mu      sync.Mutex
	ts      oauth2.TokenSource
	granted []string // scopes asked for so far: a step-up adds to them
}

// newMachineAuth reads cfg's credentials (expanding ${NAME} with getenv, reading the key).
func newMachineAuth(cfg ServerConfig, getenv func(string) string, client *http.Client) (*machineAuth, error) {
	o := cfg.OAuth
	a := &machineAuth{server: cfg.URL, client: client, id: expand(o.ClientID, getenv), secret: expand(o.ClientSecret, getenv)}
	pemText := expand(o.PrivateKey, getenv)
	if f := expand(o.PrivateKeyFile, getenv); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("MCP server %s: oauth privateKeyFile: %w", cfg.Name, err)
		}
		pemText = string(b)
	}
	if a.id == "" || (a.secret == "" && pemText == "") {
		return nil, fmt.Errorf("MCP server %s: oauth: the clientId and its secret or key came out empty (is the ${VARIABLE} they name set?)", cfg.Name)
	}
	if pemText != "" {
		key, alg, err := parseSigningKey(pemText, o.SigningAlgorithm)
		if err != nil {
			return nil, fmt.Errorf("MCP server %s: oauth private key: %w", cfg.Name, err)
		}
		a.key, a.alg = key, alg
	}
	return a, nil
}

// parseSigningKey reads a PEM private key (PKCS#8, SEC 1 or PKCS#1) and the algorithm to
// sign with: alg when given and fit for the key, else the key's usual one.
func parseSigningKey(text, alg string) (any, string, error) {
	block, _ := pem.Decode([]byte(text))
	if block == nil {
		return nil, "", errors.New("no PEM block found (want -----BEGIN PRIVATE KEY-----)")
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		if k, e := x509.ParseECPrivateKey(block.Bytes); e == nil {
			key, err = k, nil
		} else if k, e := x509.ParsePKCS1PrivateKey(block.Bytes); e == nil {
			key, err = k, nil
		}
	}
	if err != nil {
		return nil, "", fmt.Errorf("not a private key jean2 reads (PKCS#8, EC or RSA): %w", err)
	}
	var usual string
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		usual = map[elliptic.Curve]string{elliptic.P256(): "ES256", elliptic.P384(): "ES384", elliptic.P521(): "ES512"}[k.Curve]
	case *rsa.PrivateKey:
		usual = "RS256"
	case ed25519.PrivateKey:
		usual = "EdDSA"
	}
	if usual == "" {
		return nil, "", fmt.Errorf("a %T key cannot sign a JWT here", key)
	}
	if alg == "" {
		return key, usual, nil
	}
	if alg[:2] != usual[:2] && !(usual == "RS256" && strings.HasPrefix(alg, "PS")) {
		return nil, "", fmt.Errorf("signingAlgorithm %s does not fit a %T key (use %s)", alg, key, usual)
	}
	return key, alg, nil
}

func (a *machineAuth) TokenSource(context.Context) (oauth2.TokenSource, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ts, nil
}

// Authorize gets a token after the server refused a request (401, or 403 asking for more
// scopes): the server's protected resource metadata names its authorization server,
// whose metadata names the token endpoint.
func (a *machineAuth) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusForbidden && !insufficientScope(resp.Header) {
		return nil // a refusal no token changes: reported as the 403 it is
	}
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	prm := a.resourceMetadata(ctx, challenges)
	if len(prm.AuthorizationServers) == 0 {
		return fmt.Errorf("the server's protected resource metadata names no authorization server")
	}
	issuer := prm.AuthorizationServers[0]
	asm, err := auth.GetAuthServerMetadata(ctx, issuer, a.client)
	if err != nil {
		return fmt.Errorf("authorization server %s: %w", issuer, err)
	}
	if asm == nil { // no metadata: the 2025-03-26 default endpoints
		asm = &oauthex.AuthServerMeta{Issuer: issuer, TokenEndpoint: strings.TrimSuffix(issuer, "/") + "/token"}
	}
	if g := asm.GrantTypesSupported; len(g) > 0 && !slices.Contains(g, GrantClientCredentials) {
		return fmt.Errorf("authorization server %s does not offer the client_credentials grant (it offers %s)", asm.Issuer, strings.Join(g, ", "))
	}
	scopes := challengeScopes(challenges)
	if len(scopes) == 0 {
		scopes = prm.ScopesSupported
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range scopes {
		if !slices.Contains(a.granted, s) {
			a.granted = append(a.granted, s)
		}
	}
	ts := oauth2.ReuseTokenSource(nil, &machineSource{a: a, ctx: context.WithValue(context.WithoutCancel(ctx), oauth2.HTTPClient, a.client), asm: asm, scopes: slices.Clone(a.granted)})
	if _, err := ts.Token(); err != nil {
		a.ts = nil
		return fmt.Errorf("client credentials token request to %s: %w", asm.TokenEndpoint, err)
	}
	a.ts = ts
	return nil
}

// resourceMetadata finds the server's protected resource metadata: where its challenge
// says, else at the well-known path of its endpoint, else at its root; a server with none
// is its own authorization server (the 2025-03-26 revision).
func (a *machineAuth) resourceMetadata(ctx context.Context, challenges []oauthex.Challenge) *oauthex.ProtectedResourceMetadata {
	u, err := url.Parse(a.server)
	if err != nil {
		return &oauthex.ProtectedResourceMetadata{}
	}
	origin := *u
	origin.Path, origin.RawQuery = "", ""
	type place struct{ doc, resource string }
	var places []place
	for _, c := range challenges {
		if m := c.Params["resource_metadata"]; m != "" {
			places = append(places, place{m, a.server})
		}
	}
	wellKnown := origin.String() + "/.well-known/oauth-protected-resource"
	// The root document describes the server's origin as the resource.
	places = append(places, place{wellKnown + "/" + strings.TrimLeft(u.Path, "/"), a.server}, place{wellKnown, origin.String()})
	for _, p := range places {
		if prm, err := oauthex.GetProtectedResourceMetadata(ctx, p.doc, p.resource, a.client); err == nil && prm != nil {
			return prm
		}
	}
	return &oauthex.ProtectedResourceMetadata{AuthorizationServers: []string{origin.String()}}
}

// challengeScopes are the scopes a Bearer challenge asks for.
func challengeScopes(cs []oauthex.Challenge) []string {
	for _, c := range cs {
		if strings.EqualFold(c.Scheme, "bearer") && c.Params["scope"] != "" {
			return strings.Fields(c.Params["scope"])
		}
	}
	return nil
}

// machineSource asks the token endpoint for a token each time it is called; a JWT client
// proves itself with a new assertion each time (they live a minute).
type machineSource struct {
	a      *machineAuth
	ctx    context.Context
	asm    *oauthex.AuthServerMeta
	scopes []string
}

func (s *machineSource) Token() (*oauth2.Token, error) {
	cfg := clientcredentials.Config{ClientID: s.a.id, TokenURL: s.asm.TokenEndpoint, Scopes: s.scopes}
	if s.a.key == nil {
		cfg.ClientSecret = s.a.secret
		cfg.AuthStyle = secretStyle(s.asm.TokenEndpointAuthMethodsSupported)
		return cfg.Token(s.ctx)
	}
	if m := s.asm.TokenEndpointAuthMethodsSupported; len(m) > 0 && !slices.Contains(m, "private_key_jwt") {
		return nil, fmt.Errorf("the authorization server does not take private_key_jwt (it takes %s): give the clientSecret instead", strings.Join(m, ", "))
	}
	assertion, err := s.assertion()
	if err != nil {
		return nil, err
	}
	cfg.AuthStyle = oauth2.AuthStyleInParams
	cfg.EndpointParams = url.Values{"client_assertion_type": {jwtAssertionType}, "client_assertion": {assertion}}
	return cfg.Token(s.ctx)
}

// assertion is a JWT naming the client (iss, sub) to the authorization server (aud: its
// issuer identifier), signed with the client's key.
func (s *machineSource) assertion() (string, error) {
	jti := make([]byte, 16)
	_, _ = rand.Read(jti)
	now := time.Now()
	claims := jwt.RegisteredClaims{
		Issuer: s.a.id, Subject: s.a.id, Audience: jwt.ClaimStrings{s.asm.Issuer}, ID: hex.EncodeToString(jti),
		IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Minute)),
	}
	signed, err := jwt.NewWithClaims(jwt.GetSigningMethod(s.a.alg), claims).SignedString(s.a.key)
	if err != nil {
		return "", fmt.Errorf("sign the client assertion with %s: %w", s.a.alg, err)
	}
	return signed, nil
}

// secretStyle is how a client secret is sent: as the authorization server says it takes
// it (basic first: RFC 6749 says servers MUST support it), else found out by trying.
func secretStyle(methods []string) oauth2.AuthStyle {
	switch {
	case slices.Contains(methods, "client_secret_basic"):
		return oauth2.AuthStyleInHeader
	case slices.Contains(methods, "client_secret_post"):
		return oauth2.AuthStyleInParams
	}
	return oauth2.AuthStyleAutoDetect
}

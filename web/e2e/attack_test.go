package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/mcpclient"
	"github.com/jean2/jean2/mcpclient/oauthtest"
	"github.com/jean2/jean2/server"
)

// TestAttackSignInPageNavigatesJean2 — reverse tabnabbing: a hosted MCP server names an
// authorization server, and Connect opens its page in a new tab. That page is the server's
// to write: before, the tab kept window.opener (window.open("", "_blank") then a change of
// location), and the page sent jean2's own tab to a look-alike "your session expired, paste
// your provider key" page while the person looked at the sign-in. Now the tab is opened
// without an opener: the page sees window.opener null and jean2's tab stays where it was.
func TestAttackSignInPageNavigatesJean2(t *testing.T) {
	var mu sync.Mutex
	var reports, phished []string
	mux := http.NewServeMux()
	var hostile *httptest.Server
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": hostile.URL, "authorization_endpoint": hostile.URL + "/authorize", "token_endpoint": hostile.URL + "/token",
			"registration_endpoint": hostile.URL + "/register", "response_types_supported": []string{"code"},
			"grant_types_supported": []string{"authorization_code"}, "code_challenge_methods_supported": []string{"S256"},
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
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><title>Sign in</title><p>Sign in to hosted</p><script>
const has = window.opener !== null;
fetch("/report?opener=" + has).finally(() => { if (has) window.opener.location = location.origin + "/phished"; });
</script>`)
	})
	mux.HandleFunc("GET /report", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reports = append(reports, r.URL.Query().Get("opener"))
		mu.Unlock()
	})
	mux.HandleFunc("GET /phished", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		phished = append(phished, r.URL.String())
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><title>jean2</title><p>Your session expired. Paste your provider key to continue.</p>`)
	})
	hostile = httptest.NewServer(mux)
	t.Cleanup(hostile.Close)
	url := oauthtest.ProtectedServer(t, &oauthtest.AuthServer{Server: hostile})

	var m *mcpclient.Manager
	f := newFixtureWith(t, func(f *fixture, cfg *server.Config) {
		m = mcpclient.New(mcpclient.Config{Servers: []mcpclient.ServerConfig{{Name: "hosted", URL: url, Type: "http", File: "mcp.json"}}}, nil,
			mcpclient.Options{Tokens: mcpclient.NewTokenStore(f.home), MinBackoff: time.Minute, MaxBackoff: time.Minute,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		m.Start(ctx)
		cfg.Host.Sources = append([]host.ToolSource{}, m.Sources()...)
	})
	t.Cleanup(m.Close)
	f.otherSite = true // the sign-in tab opens the authorization server's page
	f.open("#/settings")
	f.waitText(`tr[data-server="hosted"]`, "needs sign-in")
	f.clickText(`tr[data-server="hosted"]`, "Connect hosted")
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(reports)
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the sign-in page never ran")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The page reported before it would act; give a navigation it started time to land.
	time.Sleep(time.Second)
	mu.Lock()
	defer mu.Unlock()
	where := f.eval(`location.origin`)
	if reports[0] != "false" || len(phished) > 0 || where != f.ts.URL {
		t.Fatalf("the sign-in page saw window.opener: %v; it sent jean2's tab to %v; jean2's tab is now at %s (jean2 is %s)", reports, phished, where, f.ts.URL)
	}
}

package server

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/internal/pgtest"
)

// startPostgres starts a throwaway PostgreSQL cluster of the test's own, which it may halt
// and resume: an outage of the database the server is on.
func startPostgres(t *testing.T) *pgtest.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := pgtest.Start(ctx)
	if err != nil {
		if os.Getenv(pgtest.EnvRequire) == "1" {
			t.Fatal(err)
		}
		t.Skipf("no PostgreSQL for this test: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// Found by a fault-injection pass: PostgreSQL refusing connections made every API call a
// 500 "internal" ("its log says why"). While the database is down the API answers 503
// database_unavailable, which names it, with a Retry-After; once it is back, the same
// calls work again without a restart.
func TestPostgresOutageAnswers503(t *testing.T) {
	pg := startPostgres(t)
	f := newFixture(t)
	f.cfg.DatabaseURL = pg.URL("postgres")
	f.start()
	f.call("GET", "/api/workspaces", nil, 200, nil)

	pg.Halt()
	calls := []struct {
		method, path string
		body         any
	}{
		{"GET", "/api/workspaces", nil},
		{"GET", "/api/sessions", nil},
		{"POST", "/api/workspaces", map[string]any{"path": f.ws}},
	}
	for _, c := range calls {
		status, body := f.request(c.method, c.path, c.body, nil)
		if status != http.StatusServiceUnavailable || errorCode(t, body) != codeDatabaseUnavailable {
			t.Errorf("%s %s with the database down: %d %s, want 503 %s", c.method, c.path, status, body, codeDatabaseUnavailable)
		}
		// The web client and jean2 chat show the message as it is.
		if !strings.Contains(string(body), `"message":"database unavailable, retrying: the server's PostgreSQL database`) {
			t.Errorf("%s %s: the message does not say the database is unavailable: %s", c.method, c.path, body)
		}
	}
	req, _ := http.NewRequest("GET", f.ts.URL+"/api/workspaces", nil)
	req.Header = f.authHeader()
	if resp, err := f.ts.Client().Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
		if resp.Header.Get("Retry-After") == "" {
			t.Errorf("a 503 for the database has no Retry-After")
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := pg.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	for {
		status, body := f.request("GET", "/api/workspaces", nil, nil)
		if status == 200 {
			break
		}
		if time.Since(back) > 20*time.Second {
			t.Fatalf("20 s after the database came back the API still answers %d %s", status, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("the API worked again %v after the database came back", time.Since(back).Round(time.Millisecond))
	f.call("POST", "/api/workspaces", map[string]any{"path": f.ws}, 201, nil)
}

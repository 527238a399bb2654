package web_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/jean2/jean2/web"
	"github.com/jean2/jean2/web/internal/browsertest"
)

// TestModulesInBrowser runs testdata/unit.js in Chromium: the markdown renderer (and that
// it never turns model text into markup or loads a remote image), the highlighter, the line
// diff, every visualization type, the schema forms and the ask forms, each on a real DOM
// under the page's Content-Security-Policy.
func TestModulesInBrowser(t *testing.T) {
	b := browsertest.New(t)
	app := web.Handler()
	csp := csPolicy(t, app)
	mux := http.NewServeMux()
	for _, name := range []string{"unit.html", "unit.js"} {
		body, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		ctype := "text/html; charset=utf-8"
		if filepath.Ext(name) == ".js" {
			ctype = "text/javascript; charset=utf-8"
		}
		mux.HandleFunc("/"+name, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ctype)
			w.Header().Set("Content-Security-Policy", csp)
			w.Write(body)
		})
	}
	mux.Handle("/", app)
	ts := httptest.NewServer(mux)
	defer ts.Close()

	if err := b.Do(30*time.Second, chromedp.Navigate(ts.URL+"/unit.html")); err != nil {
		t.Fatal(err)
	}
	if _, err := browsertest.Eval[bool](b, 60*time.Second, `new Promise((resolve) => { const check = () => window.__done ? resolve(true) : setTimeout(check, 20); check(); })`); err != nil {
		t.Fatalf("the unit page did not finish: %v", err)
	}
	type result struct {
		Name string `json:"name"`
		OK   bool   `json:"ok"`
		Msg  string `json:"msg"`
	}
	results, err := browsertest.Eval[[]result](b, 10*time.Second, `window.__results`)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) < 20 {
		t.Fatalf("only %d in-browser tests ran: %+v", len(results), results)
	}
	for _, r := range results {
		if !r.OK {
			t.Errorf("%s: %s", r.Name, r.Msg)
		}
	}
	if errs := b.Errors(); len(errs) > 0 {
		t.Errorf("script errors on the page: %v", errs)
	}
	if err := b.CheckLocal(ts.URL); err != nil {
		t.Error(err)
	}
	t.Logf("%d in-browser tests ran", len(results))
}

func csPolicy(t *testing.T, h http.Handler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	csp := rec.Header().Get("Content-Security-Policy")
	if csp == "" {
		t.Fatal("the client is served without a Content-Security-Policy")
	}
	return csp
}

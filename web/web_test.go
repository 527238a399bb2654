package web_test

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/jean2/jean2/web"
)

func get(t *testing.T, h http.Handler, target string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
	return rec
}

// TestHandlerServesTheClient: the index at / and at client routes (so a reload on
// #-less deep links still opens the app), modules with a JavaScript type, 404 for a missing
// asset, and the headers that keep every request on this origin.
func TestHandlerServesTheClient(t *testing.T) {
	h := web.Handler()
	for _, target := range []string{"/", "/s/abc", "/tools"} {
		rec := get(t, h, target)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `<div id="app">`) {
			t.Errorf("GET %s: status %d, body %.80q; want the index page", target, rec.Code, rec.Body.String())
		}
		if !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
			t.Errorf("GET %s: Content-Type %q", target, rec.Header().Get("Content-Type"))
		}
	}
	rec := get(t, h, "/js/main.js")
	if rec.Code != http.StatusOK || !strings.Contains(rec.Header().Get("Content-Type"), "javascript") {
		t.Errorf("GET /js/main.js: status %d, Content-Type %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	if rec := get(t, h, "/js/nope.js"); rec.Code != http.StatusNotFound {
		t.Errorf("GET /js/nope.js: status %d, want 404", rec.Code)
	}
	if rec := get(t, h, "/../web.go"); rec.Code == http.StatusOK && strings.Contains(rec.Body.String(), "package web") {
		t.Error("a path with .. served a file outside the assets")
	}
	csp := rec.Header().Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "script-src 'self'", "connect-src 'self'", "object-src 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Error("X-Content-Type-Options: nosniff is missing")
	}
}

var (
	importRe = regexp.MustCompile(`(?m)^import\s[^"'\n]*["']([^"'\n]+)["'];$|^export\s[^"'\n]*\sfrom\s["']([^"'\n]+)["'];$`)
	assetRe  = regexp.MustCompile(`(?:src|href)="([^"]+)"`)
	remoteRe = regexp.MustCompile(`(?i)(?:src|href)\s*=\s*["']?(?:https?:)?//|url\(\s*["']?(?:https?:)?//|@import\s+(?:url\()?["']?(?:https?:)?//|import\s*\(?\s*["'](?:https?:)?//|from\s+["'](?:https?:)?//`)
)

// TestAssetsAreLocalAndComplete: every module a module imports and every file the index
// names is embedded, and no asset loads anything from another host (no CDN, no web font).
func TestAssetsAreLocalAndComplete(t *testing.T) {
	assets := web.Assets()
	count, refCount := 0, 0
	err := fs.WalkDir(assets, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		count++
		body, err := fs.ReadFile(assets, name)
		if err != nil {
			return err
		}
		text := string(body)
		if path.Ext(name) == ".js" {
			// Model and tool text must never be parsed as markup: the client builds nodes.
			for _, banned := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "new Function", "eval("} {
				if strings.Contains(text, banned) {
					t.Errorf("%s uses %s", name, banned)
				}
			}
		}
		if m := remoteRe.FindString(text); m != "" {
			t.Errorf("%s loads from another host: %q", name, m)
		}
		var refs []string
		switch path.Ext(name) {
		case ".js":
			for _, m := range importRe.FindAllStringSubmatch(text, -1) {
				refs = append(refs, path.Join(path.Dir(name), m[1]+m[2]))
			}
		case ".html":
			for _, m := range assetRe.FindAllStringSubmatch(text, -1) {
				if strings.HasPrefix(m[1], "data:") {
					continue
				}
				refs = append(refs, strings.TrimPrefix(m[1], "/"))
			}
		}
		refCount += len(refs)
		for _, ref := range refs {
			if _, err := fs.Stat(assets, ref); err != nil {
				t.Errorf("%s refers to %s, which is not embedded", name, ref)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if count < 10 || refCount < 20 {
		t.Errorf("only %d files embedded and %d references checked: the patterns no longer match the sources", count, refCount)
	}
}

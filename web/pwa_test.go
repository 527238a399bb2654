package web_test

import (
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/jean2/jean2/web"
	"github.com/jean2/jean2/web/internal/browsertest"
)

// changedBuild is the client's files with app.css changed: another build, another version.
func changedBuild(t *testing.T) fs.FS {
	t.Helper()
	out := fstest.MapFS{}
	err := fs.WalkDir(web.Assets(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(web.Assets(), name)
		if name == "app.css" {
			data = append(data, "\n/* the next build */\n"...)
		}
		out[name] = &fstest.MapFile{Data: data, Mode: 0o644}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func buildVersion(t *testing.T, h http.Handler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	m := regexp.MustCompile(`/a/([0-9a-f]{12})/`).FindStringSubmatch(rec.Body.String())
	if m == nil {
		t.Fatalf("the index names no version: %s", rec.Body.String())
	}
	return m[1]
}

// TestServiceWorkerNamesItsBuild: sw.js carries the build's version and shell, the
// versioned files under /a/<version>/ and the offline page, not the index or itself.
func TestServiceWorkerNamesItsBuild(t *testing.T) {
	h := web.Handler()
	version := buildVersion(t, h)
	rec := get(t, h, "/sw.js")
	m := regexp.MustCompile(`const BUILD = (\{.*\});`).FindStringSubmatch(rec.Body.String())
	if rec.Code != 200 || m == nil || rec.Header().Get("Cache-Control") != "no-cache" {
		t.Fatalf("sw.js: %d, Cache-Control %q, BUILD line found %v", rec.Code, rec.Header().Get("Cache-Control"), m != nil)
	}
	var build struct {
		Version string
		Shell   []string
	}
	if err := json.Unmarshal([]byte(m[1]), &build); err != nil {
		t.Fatal(err)
	}
	shell := strings.Join(build.Shell, " ")
	if build.Version != version || !strings.Contains(shell, "/a/"+version+"/js/main.js") || !strings.Contains(shell, "/offline.html") ||
		strings.Contains(shell, "index.html") || strings.Contains(shell, "sw.js") {
		t.Fatalf("BUILD %+v for version %s", build, version)
	}
	if ct := get(t, h, "/manifest.webmanifest").Header().Get("Content-Type"); ct != "application/manifest+json" {
		t.Errorf("manifest Content-Type %q", ct)
	}
}

// TestNewBuildReplacesTheShellCache: in Chromium, the worker caches the shell under its
// build's version; when the server serves another build, the browser's update check
// installs the new worker, which caches the new files and deletes the old cache.
func TestNewBuildReplacesTheShellCache(t *testing.T) {
	b := browsertest.New(t)
	first, next := web.Handler(), web.HandlerFor(changedBuild(t))
	v1, v2 := buildVersion(t, first), buildVersion(t, next)
	if v1 == v2 {
		t.Fatalf("a changed app.css kept the version %s", v1)
	}
	var current atomic.Pointer[http.Handler]
	current.Store(&first)
	mux := http.NewServeMux()
	mux.HandleFunc("/blank.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte("<!doctype html><title>blank</title>"))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { (*current.Load()).ServeHTTP(w, r) })
	ts := httptest.NewServer(mux)
	defer ts.Close()

	if err := b.Do(30*time.Second, chromedp.Navigate(ts.URL+"/blank.html")); err != nil {
		t.Fatal(err)
	}
	if _, err := browsertest.Eval[bool](b, 30*time.Second, `navigator.serviceWorker.register("/sw.js").then(() => true)`); err != nil {
		t.Fatal(err)
	}
	cacheNames := `(async () => JSON.stringify(await caches.keys()))()`
	waitFor := func(want string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			got, err := browsertest.Eval[string](b, 10*time.Second, cacheNames)
			if err == nil && got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("caches %s (%v), want %s", got, err, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFor(`["jean2-shell-` + v1 + `"]`)

	current.Store(&next)
	if _, err := browsertest.Eval[bool](b, 30*time.Second, `navigator.serviceWorker.getRegistration("/").then((r) => r.update()).then(() => true)`); err != nil {
		t.Fatal(err)
	}
	waitFor(`["jean2-shell-` + v2 + `"]`)
	css, err := browsertest.Eval[string](b, 10*time.Second, `caches.open("jean2-shell-`+v2+`").then((c) => c.match("/a/`+v2+`/app.css")).then((r) => r ? r.text() : "")`)
	if err != nil || !strings.Contains(css, "the next build") {
		t.Fatalf("the new cache's app.css is not the new build's (%v)", err)
	}
	if errs := b.Errors(); len(errs) > 0 {
		t.Errorf("script errors: %v", errs)
	}
}

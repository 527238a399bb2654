package web_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"

	"github.com/jean2/jean2/web"
)

// TestAssetsCompressedAndCached: the page links its assets under /a/<version>/, served
// immutable; every asset comes compressed, brotli or gzip, to a browser that takes it (and whole to one that
// does not), with an ETag that answers 304; the index page itself is always revalidated.
func TestAssetsCompressedAndCached(t *testing.T) {
	h := web.Handler()
	page := get(t, h, "/")
	if cc := page.Header().Get("Cache-Control"); cc != "no-cache" {
		t.Errorf("index Cache-Control %q, want no-cache", cc)
	}
	m := regexp.MustCompile(`src="(/a/[0-9a-f]{12}/js/main\.js)"`).FindStringSubmatch(page.Body.String())
	if m == nil || !strings.Contains(page.Body.String(), `href="/a/`) {
		t.Fatalf("the index does not link its assets under /a/<version>/: %s", page.Body.String())
	}
	main := m[1]
	req := httptest.NewRequest("GET", main, nil)
	req.Header.Set("Accept-Encoding", "br, gzip;q=0.8")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 || rec.Header().Get("Content-Encoding") != "br" || !strings.Contains(rec.Header().Get("Cache-Control"), "immutable") {
		t.Fatalf("GET %s: %d, encoding %q, cache %q", main, rec.Code, rec.Header().Get("Content-Encoding"), rec.Header().Get("Cache-Control"))
	}
	plain, err := io.ReadAll(brotli.NewReader(bytes.NewReader(rec.Body.Bytes())))
	if err != nil {
		t.Fatal(err)
	}
	whole := get(t, h, "/js/main.js")
	if !bytes.Equal(plain, whole.Body.Bytes()) || len(rec.Body.Bytes()) >= len(plain) {
		t.Errorf("the brotli main.js (%d bytes) is not main.js (%d bytes) made smaller", len(rec.Body.Bytes()), len(plain))
	}
	// A browser that takes gzip alone (or refuses brotli) gets gzip.
	for _, accept := range []string{"gzip", "br;q=0, gzip"} {
		req := httptest.NewRequest("GET", main, nil)
		req.Header.Set("Accept-Encoding", accept)
		gzRec := httptest.NewRecorder()
		h.ServeHTTP(gzRec, req)
		if gzRec.Header().Get("Content-Encoding") != "gzip" {
			t.Fatalf("Accept-Encoding %q: encoding %q, want gzip", accept, gzRec.Header().Get("Content-Encoding"))
		}
		zr, err := gzip.NewReader(bytes.NewReader(gzRec.Body.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		if unzipped, err := io.ReadAll(zr); err != nil || !bytes.Equal(unzipped, plain) {
			t.Fatalf("the gzipped main.js is not main.js: %v", err)
		}
	}
	if whole.Header().Get("Content-Encoding") != "" || whole.Header().Get("Cache-Control") != "no-cache" {
		t.Errorf("plain /js/main.js without Accept-Encoding: encoding %q, cache %q", whole.Header().Get("Content-Encoding"), whole.Header().Get("Cache-Control"))
	}
	etag := rec.Header().Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	req = httptest.NewRequest("GET", "/js/main.js", nil)
	req.Header.Set("If-None-Match", etag)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotModified || rec.Body.Len() != 0 {
		t.Errorf("If-None-Match with the ETag: %d with %d bytes, want 304 and none", rec.Code, rec.Body.Len())
	}
	// A relative import of main.js stays under the same version.
	if rec := get(t, h, strings.Replace(main, "main.js", "chat.js", 1)); rec.Code != 200 || !strings.Contains(rec.Header().Get("Cache-Control"), "immutable") {
		t.Errorf("chat.js under the version: %d %q", rec.Code, rec.Header().Get("Cache-Control"))
	}
	// Another version (an old page after an upgrade) gets today's file, revalidated.
	if rec := get(t, h, "/a/000000000000/js/main.js"); rec.Code != 200 || rec.Header().Get("Cache-Control") != "no-cache" {
		t.Errorf("an old version: %d %q", rec.Code, rec.Header().Get("Cache-Control"))
	}
	if rec := get(t, h, "/a/x/js/nope.js"); rec.Code != http.StatusNotFound {
		t.Errorf("a missing asset under /a/: %d", rec.Code)
	}
}

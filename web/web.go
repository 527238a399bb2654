// Package web holds jean2's browser client: plain ES modules and CSS, served as they are
// (no bundler, so the assets in the binary are the sources in this folder).
//
// The server mounts Handler at "/"; the API lives under its own prefix and is not served here.
package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/andybalholm/brotli"
)

//go:embed static
var embedded embed.FS

// Assets returns the client's files rooted at the folder that holds index.html.
func Assets() fs.FS {
	sub, err := fs.Sub(embedded, "static")
	if err != nil {
		// fs.Sub fails only on an invalid path; "static" is a constant that go:embed checked.
		panic("web: embedded assets: " + err.Error())
	}
	return sub
}

// Handler serves the client. Unknown paths without a file extension get index.html, so a
// reload on a client route (e.g. /w/<id>/s/<id>) still opens the app.
//
// Every asset is served compressed (brotli or gzip, whichever the browser takes, brotli
// first) with an ETag. The page
// loads its assets under /a/<version>/, a name that changes with their content, so they are
// cached for good (immutable) and a new build is fetched at once: the modules import one
// another by relative paths, which stay under the same /a/<version>/. The plain paths
// (/app.css, /js/…) are served too, revalidated on each use.
func Handler() http.Handler { return handlerFor(Assets()) }

// handlerFor is Handler over the files of fsys (a test serves a changed build).
func handlerFor(fsys fs.FS) http.Handler {
	set := newAssetSet(fsys)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Security-Policy", contentSecurityPolicy)
		w.Header().Set("Referrer-Policy", "no-referrer")
		name := r.URL.Path
		immutable := false
		if rest, ok := strings.CutPrefix(name, "/a/"); ok {
			version, file, _ := strings.Cut(rest, "/")
			name = "/" + file
			// An older page asking for an older version gets today's file, not cached for good.
			immutable = version == set.version
		}
		a := set.files[strings.TrimPrefix(name, "/")]
		if name == "/" || a == nil {
			if hasExtension(name) {
				http.NotFound(w, r)
				return
			}
			a = set.index
		}
		if a == set.index {
			immutable = false
		}
		set.serve(w, r, a, immutable)
	})
}

// asset is one file of the client, ready to serve.
type asset struct {
	name  string
	ctype string
	raw   []byte
	gz    []byte // nil when compressing does not pay
	br    []byte // brotli, likewise
	etag  string
}

// assetSet is the client's files, read and compressed once when the handler is made.
type assetSet struct {
	version string // of every file's content: the /a/<version>/ of the page's links
	files   map[string]*asset
	index   *asset // index.html with its links under /a/<version>/
}

func newAssetSet(fsys fs.FS) *assetSet {
	set := &assetSet{files: map[string]*asset{}}
	var names []string
	_ = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, p)
		}
		return nil
	})
	sort.Strings(names)
	all := sha256.New()
	for _, n := range names {
		raw, err := fs.ReadFile(fsys, n)
		if err != nil {
			// The files are embedded: one that cannot be read is a broken build.
			panic("web: embedded asset " + n + ": " + err.Error())
		}
		set.files[n] = newAsset(n, raw)
		all.Write([]byte(n))
		all.Write(raw)
	}
	set.version = hex.EncodeToString(all.Sum(nil))[:12]
	if idx := set.files["index.html"]; idx != nil {
		page := strings.NewReplacer(`href="/app.css"`, `href="/a/`+set.version+`/app.css"`,
			`src="/js/main.js"`, `src="/a/`+set.version+`/js/main.js"`).Replace(string(idx.raw))
		set.index = newAsset("index.html", []byte(page))
		set.files["index.html"] = set.index
	}
	if sw := set.files["sw.js"]; sw != nil {
		set.files["sw.js"] = newAsset("sw.js", set.withBuild(sw.raw))
	}
	return set
}

func newAsset(name string, raw []byte) *asset {
	ctype := mime.TypeByExtension(path.Ext(name))
	switch path.Ext(name) {
	case ".js", ".mjs":
		ctype = "text/javascript; charset=utf-8"
	case ".css":
		ctype = "text/css; charset=utf-8"
	case ".html":
		ctype = "text/html; charset=utf-8"
	case ".webmanifest":
		ctype = "application/manifest+json"
	}
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	sum := sha256.Sum256(raw)
	a := &asset{name: name, ctype: ctype, raw: raw, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
	if len(raw) > 512 && (strings.HasPrefix(ctype, "text/") || strings.Contains(ctype, "json") || strings.Contains(ctype, "svg")) {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		_, _ = zw.Write(raw)
		_ = zw.Close()
		if b.Len() < len(raw)*9/10 {
			a.gz = b.Bytes()
		}
		// Quality 5 rather than 11: smaller than the best gzip, and fast enough
		// that making the handler (at every server's start) takes some 50 ms for all of them.
		var c bytes.Buffer
		bw := brotli.NewWriterLevel(&c, 5)
		_, _ = bw.Write(raw)
		_ = bw.Close()
		if c.Len() < len(raw)*9/10 && (a.gz == nil || c.Len() < len(a.gz)) {
			a.br = c.Bytes()
		}
	}
	return a
}

func (set *assetSet) serve(w http.ResponseWriter, r *http.Request, a *asset, immutable bool) {
	h := w.Header()
	h.Set("Content-Type", a.ctype)
	h.Set("ETag", a.etag)
	h.Set("Vary", "Accept-Encoding")
	if immutable {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if match := r.Header.Get("If-None-Match"); match != "" && etagMatches(match, a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := a.raw
	switch accept := r.Header.Get("Accept-Encoding"); {
	case a.br != nil && accepts(accept, "br"):
		h.Set("Content-Encoding", "br")
		body = a.br
	case a.gz != nil && accepts(accept, "gzip"):
		h.Set("Content-Encoding", "gzip")
		body = a.gz
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}

// accepts reads Accept-Encoding: coding (or *) unless it is given q=0.
func accepts(header, coding string) bool {
	for _, part := range strings.Split(header, ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(enc), coding) && strings.TrimSpace(enc) != "*" {
			continue
		}
		q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}

// contentSecurityPolicy keeps every request on this origin: no CDN, no remote fonts, no
// inline script, so text a model wrote cannot run even if it reached the DOM as markup.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; " +
	"img-src 'self' data: blob:; connect-src 'self'; font-src 'self'; object-src 'none'; " +
	"base-uri 'none'; frame-ancestors 'none'; form-action 'self'"

func hasExtension(urlPath string) bool {
	for i := len(urlPath) - 1; i >= 0 && urlPath[i] != '/'; i-- {
		if urlPath[i] == '.' {
			return true
		}
	}
	return false
}

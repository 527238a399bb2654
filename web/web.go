// Package web holds jean2's browser client: plain ES modules and CSS, served as they are
// (no bundler, so the assets in the binary are the sources in this folder).
//
// The server mounts Handler at "/"; the API lives under its own prefix and is not served here.
package web

import (
	"embed"
	"io/fs"
	"net/http"
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
func Handler() http.Handler {
	assets := Assets()
	files := http.FileServerFS(assets)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Security-Policy", contentSecurityPolicy)
		w.Header().Set("Referrer-Policy", "no-referrer")
		name := r.URL.Path
		if name == "/" || !exists(assets, name) {
			if hasExtension(name) {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Cache-Control", "no-cache")
			http.ServeFileFS(w, r, assets, "index.html")
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}

// contentSecurityPolicy keeps every request on this origin: no CDN, no remote fonts, no
// inline script, so text a model wrote cannot run even if it reached the DOM as markup.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; " +
	"img-src 'self' data: blob:; connect-src 'self'; font-src 'self'; object-src 'none'; " +
	"base-uri 'none'; frame-ancestors 'none'; form-action 'self'"

func exists(assets fs.FS, urlPath string) bool {
	name := urlPath
	for len(name) > 0 && name[0] == '/' {
		name = name[1:]
	}
	if name == "" || !fs.ValidPath(name) {
		return false
	}
	info, err := fs.Stat(assets, name)
	return err == nil && !info.IsDir()
}

func hasExtension(urlPath string) bool {
	for i := len(urlPath) - 1; i >= 0 && urlPath[i] != '/'; i-- {
		if urlPath[i] == '.' {
			return true
		}
	}
	return false
}

package web

import (
	"encoding/json"
	"sort"
	"strings"
)

// The installable app (docs/web.md, "Installing"): a manifest, icons, an offline page and a
// service worker, sw.js, served from the root so that its scope is the whole client.

// buildLine is the line of sw.js that newAssetSet replaces with this build's version and
// shell files.
const buildLine = `const BUILD = { version: "dev", shell: [] }; // BUILD`

// unversioned are the files the page and the worker ask for by their plain path (the
// manifest names its icons so, the offline page is served for any address); every other
// file is loaded under /a/<version>/.
func unversioned(name string) bool {
	switch name {
	case "offline.html", "offline.css", "offline.js", "manifest.webmanifest":
		return true
	}
	return strings.HasPrefix(name, "icons/")
}

// shell lists the URLs the service worker caches when it installs: every file of the
// build but the index (always fetched, as it names the build) and the worker itself.
func (set *assetSet) shell() []string {
	var out []string
	for name := range set.files {
		switch {
		case name == "index.html" || name == "sw.js":
		case unversioned(name):
			out = append(out, "/"+name)
		default:
			out = append(out, "/a/"+set.version+"/"+name)
		}
	}
	sort.Strings(out)
	return out
}

// withBuild returns sw.js with this build's version and shell written into it: a new build
// is a changed worker, which the browser installs in place of the old one.
func (set *assetSet) withBuild(raw []byte) []byte {
	build, _ := json.Marshal(map[string]any{"version": set.version, "shell": set.shell()})
	return []byte(strings.Replace(string(raw), buildLine, "const BUILD = "+string(build)+";", 1))
}

package loader

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/jean2/jean2/internal/fsutil"
	"github.com/jean2/jean2/sdkjs"
)

// InstallScripts is what a folder that declares "jean2": {"installScripts": true} asks for:
// that the install scripts of its dependencies run. They run only once a person approved
// this dependency set (Options.InstallScripts said yes for Key).
type InstallScripts struct {
	// Key names the dependency set the approval is for: the dependencies as package.json
	// lists them, the overrides, the lockfile and the content of the local packages in the
	// folder. It does not depend on where the folder lies (a staged install and the
	// installed folder have the same key) nor on the tool's own code.
	Key string
	// Dependencies are the names of the dependencies (without the host's packages).
	Dependencies []string
	// Approved is true when the scripts were allowed to run for this load.
	Approved bool
}

// errInstallTimeout is the cause of an install stopped by Options.InstallTimeout.
var errInstallTimeout = errors.New("install time limit reached")

// localSpecPrefixes are the specifier forms that name a folder or archive on this machine.
var localSpecPrefixes = []string{"file:", "link:", "portal:"}

// localTarget reports the path a dependency specifier names on this machine, as written
// (relative to the folder or absolute), and whether it names one at all: file:, link: and
// portal: specs (also behind an npm: alias or git+file:), and bare paths and archive names.
func localTarget(spec string) (string, bool) {
	s := strings.TrimSpace(spec)
	for _, prefix := range localSpecPrefixes {
		if i := strings.Index(s, prefix); i >= 0 {
			rest := s[i+len(prefix):]
			if strings.HasPrefix(rest, "//") { // a file:// URL
				rest = strings.TrimPrefix(rest, "//")
				if host, path, ok := strings.Cut(rest, "/"); ok && (host == "" || host == "localhost") {
					rest = "/" + path
				} else if !ok {
					rest = "/"
				}
			}
			if h, _, ok := strings.Cut(rest, "#"); ok { // git+file:///repo#commit
				rest = h
			}
			return rest, true
		}
	}
	switch {
	case s == "." || s == ".." || s == "~" || strings.HasPrefix(s, "/") || strings.HasPrefix(s, "./") ||
		strings.HasPrefix(s, "../") || strings.HasPrefix(s, "~/") || strings.HasPrefix(s, `\`):
		return s, true
	}
	lower := strings.ToLower(s)
	if !strings.Contains(s, ":") && (strings.HasSuffix(lower, ".tgz") || strings.HasSuffix(lower, ".tar.gz") || strings.HasSuffix(lower, ".tar")) {
		return s, true // npm takes an archive name for a file beside package.json
	}
	return "", false
}

// insideFolder reports whether the local path p (absolute, or relative to dir) lies in the
// folder once symlinks are resolved.
func insideFolder(dir, p string) bool {
	if p == "~" || strings.HasPrefix(p, "~/") || strings.HasPrefix(p, `\`) {
		return false
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, filepath.FromSlash(p))
	}
	p = filepath.Clean(p)
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false
	}
	real, err := filepath.EvalSymlinks(p)
	if errors.Is(err, fs.ErrNotExist) {
		// Not there: the installer fails on it. Only a name that stays in the folder as
		// written may go on to that failure.
		rel, rerr := filepath.Rel(dir, p)
		return rerr == nil && within(filepath.Join(realDir, rel), realDir)
	}
	return err == nil && within(real, realDir)
}

// checkLocalDeps refuses local dependencies (in dependencies, optionalDependencies,
// overrides and the lockfile) that lie outside the tool folder: the installer reads them,
// and a confined installer is granted what they name. `file:/` would be the whole disk.
func checkLocalDeps(f Folder, installer string) error {
	pkg := f.Package
	if pkg == nil {
		return nil
	}
	outside := func(what, name, spec string) error {
		return fmt.Errorf("%s %q (%s) is outside the tool folder: a local dependency must lie in the tool's own folder", what, name, spec)
	}
	for _, group := range []map[string]string{pkg.Dependencies, pkg.OptionalDependencies} {
		names := make([]string, 0, len(group))
		for n := range group {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, name := range names {
			if sdkjs.IsHostPackage(name) {
				continue
			}
			if p, ok := localTarget(group[name]); ok && !insideFolder(f.Dir, p) {
				return outside("dependency", name, group[name])
			}
		}
	}
	if len(pkg.Overrides) > 0 {
		var bad error
		walkStrings(pkg.Overrides, "", func(key, v string) {
			if p, ok := localTarget(v); ok && !insideFolder(f.Dir, p) && bad == nil {
				bad = outside("override", key, v)
			}
		})
		if bad != nil {
			return bad
		}
	}
	for _, lock := range lockfiles[installer] {
		if err := checkLockfile(f.Dir, lock); err != nil {
			return err
		}
	}
	return nil
}

// walkStrings calls fn with every string in a JSON value and the key it is under.
func walkStrings(raw json.RawMessage, key string, fn func(key, v string)) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return
	}
	var walk func(k string, v any)
	walk = func(k string, v any) {
		switch x := v.(type) {
		case string:
			fn(k, x)
		case map[string]any:
			for kk, vv := range x {
				walk(kk, vv)
			}
		case []any:
			for _, vv := range x {
				walk(k, vv)
			}
		}
	}
	walk(key, v)
}

// lockLocalRef finds the local references of a text lockfile (bun.lock): "file:…",
// "link:…" and "portal:…" strings.
var lockLocalRef = regexp.MustCompile(`"((?:file|link|portal):[^"]*)"`)

// checkLockfile refuses a lockfile that installs a local package from outside the folder.
// The install runs in a scratch folder beside the tool folder: a relative reference that
// stays in the tool folder from there stays in the scratch folder or reaches the same place.
func checkLockfile(dir, name string) error {
	data, err := fsutil.ReadLimited(filepath.Join(dir, name), 64<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	bad := func(ref string) error {
		return fmt.Errorf("%s installs %q, which is outside the tool folder: a local dependency must lie in the tool's own folder", name, ref)
	}
	if name == "package-lock.json" || name == "npm-shrinkwrap.json" {
		var lock struct {
			Packages map[string]struct {
				Resolved string `json:"resolved"`
				Link     bool   `json:"link"`
			} `json:"packages"`
			Dependencies map[string]json.RawMessage `json:"dependencies"`
		}
		if err := json.Unmarshal(data, &lock); err != nil {
			return fmt.Errorf("%s is not valid JSON: %v", name, err)
		}
		keys := make([]string, 0, len(lock.Packages))
		for k := range lock.Packages {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			e := lock.Packages[k]
			// Keys outside node_modules are local folders, relative to the project.
			if k != "" && !strings.HasPrefix(k, "node_modules/") && !strings.Contains(k, "/node_modules/") && !insideFolder(dir, k) {
				return bad(k)
			}
			r := e.Resolved
			p, local := localTarget(r)
			if !local && r != "" && !strings.Contains(r, ":") {
				p, local = r, true // a link's resolved is a bare relative path
			}
			if local && !insideFolder(dir, p) {
				return bad(r)
			}
		}
		if lock.Dependencies != nil { // lockfileVersion 1
			var bad1 error
			walkStrings(mustJSON(lock.Dependencies), "", func(key, v string) {
				if key != "version" && key != "resolved" {
					return
				}
				if p, ok := localTarget(v); ok && !insideFolder(dir, p) && bad1 == nil {
					bad1 = bad(v)
				}
			})
			return bad1
		}
		return nil
	}
	for _, m := range lockLocalRef.FindAllSubmatch(data, -1) {
		ref := string(m[1])
		if p, ok := localTarget(ref); ok && !insideFolder(dir, p) {
			return bad(ref)
		}
	}
	return nil
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// installScriptsKey names the dependency set whose install scripts a person approves (see
// InstallScripts.Key).
func installScriptsKey(f Folder, installer string) (string, error) {
	pkg := f.Package
	h := sha256.New()
	fmt.Fprintf(h, "jean2-install-scripts/1\ninstaller=%s\n", installer)
	for _, group := range []struct {
		name string
		m    map[string]string
	}{{"dependencies", pkg.Dependencies}, {"optionalDependencies", pkg.OptionalDependencies}} {
		names := make([]string, 0, len(group.m))
		for n := range group.m {
			if !sdkjs.IsHostPackage(n) {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		fmt.Fprintf(h, "%s=%d\n", group.name, len(names))
		for _, n := range names {
			spec := group.m[n]
			fmt.Fprintf(h, "%q %q\n", n, spec)
			// A local package's scripts are its content: hash it.
			if p, ok := localTarget(spec); ok {
				if err := hashTree(h, filepath.Join(f.Dir, filepath.FromSlash(p))); err != nil {
					return "", fmt.Errorf("read local dependency %s: %w", n, err)
				}
			}
		}
	}
	fmt.Fprintf(h, "overrides=%d:%s\n", len(pkg.Overrides), pkg.Overrides)
	for _, lock := range lockfiles[installer] {
		data, err := os.ReadFile(filepath.Join(f.Dir, lock))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "lock %s %d\n", lock, len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hashTree hashes the names and contents of the files under root (a file or a folder),
// node_modules and .git left out.
func hashTree(h hash.Hash, root string) error {
	buf := make([]byte, 32<<10)
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == root {
				return nil // the installer reports it
			}
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if p != root && (d.Name() == "node_modules" || d.Name() == ".git") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			fmt.Fprintf(h, "other %q\n", filepath.ToSlash(rel))
			return nil
		}
		return hashFile(h, "f", filepath.ToSlash(rel), p, buf)
	})
}

// npmrcKeep says which settings of ~/.npmrc the installer gets: where the registries are and
// how to log in to them, nothing else (no scripts-shell, no node-options, no cafile paths).
func npmrcKeep(key string, withAuth bool) bool {
	switch {
	case key == "registry" || strings.HasSuffix(key, ":registry"):
		return true
	case key == "strict-ssl" || key == "always-auth":
		return true
	case strings.HasPrefix(key, "//"): // //registry.example/:_authToken and the like
		return withAuth
	}
	return false
}

// npmrcVar is npm's ${VAR} in .npmrc values.
var npmrcVar = regexp.MustCompile(`\$\{([^}]+)\}`)

// installNPMRC is the user configuration npm reads instead of ~/.npmrc (which is a
// credential file no installer and no install script may read): the registry lines of
// ~/.npmrc, with their ${VAR}s filled in from the host's environment, and the login lines
// only when no install script runs: a script could read this file too.
func installNPMRC(home string, withAuth bool, getenv func(string) string) []byte {
	var out bytes.Buffer
	data, err := fsutil.ReadLimited(filepath.Join(home, ".npmrc"), 1<<20)
	if err != nil {
		return nil
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if !npmrcKeep(key, withAuth) {
			continue
		}
		value = npmrcVar.ReplaceAllStringFunc(value, func(m string) string { return getenv(m[2 : len(m)-1]) })
		fmt.Fprintf(&out, "%s=%s\n", key, value)
	}
	return out.Bytes()
}

package loader

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/jean2/jean2/internal/fsutil"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Kinds of tool folder.
const (
	KindJS = "js" // TypeScript or JavaScript, bundled here and run by Node or Bun
	KindGo = "go" // tool.go + go.mod, built by the host
)

// Runtime names a folder may prefer in package.json "jean2": {"runtime": …}.
const (
	RuntimeNode = "node"
	RuntimeBun  = "bun"
)

// entryCandidates are the entry files looked for, in order, when package.json names none.
var entryCandidates = [...]string{"tool.ts", "tool.mts", "tool.js", "tool.mjs"}

// entryExtensions are the extensions an entry named by package.json "main" may have.
var entryExtensions = map[string]bool{
	".ts": true, ".mts": true, ".cts": true, ".tsx": true,
	".js": true, ".mjs": true, ".cjs": true, ".jsx": true,
}

// Limits on files read during discovery; a folder is user input and may hold anything.
const (
	maxPackageJSON = 1 << 20
	maxVersionFile = 1 << 10
)

// Folder is one tool folder as found on disk.
type Folder struct {
	Name string // directory name; the tool is known by it until its definition is loaded
	Dir  string // absolute path
	Kind string // KindJS or KindGo
	// Entry is the entry file relative to Dir, slash-separated ("tool.ts"; "tool.go" for Go).
	Entry string
	// Version is VERSION's semantic version, else package.json "version", else "".
	Version string
	// RuntimePreference is package.json "jean2": {"runtime"}: RuntimeNode, RuntimeBun or "".
	RuntimePreference string
	Package           *Package // nil when the folder has no package.json
	// Err is set when the folder is not a usable tool: an *Error of stage StageDiscover.
	// Such a folder is still listed, so the host can show why.
	Err error
}

// Package is what the loader reads from a tool's package.json.
type Package struct {
	Name                 string
	Version              string
	Type                 string
	Main                 string
	Dependencies         map[string]string
	OptionalDependencies map[string]string
	// Overrides is npm's "overrides", passed to the installer as written.
	Overrides json.RawMessage
	Runtime   string // "jean2": {"runtime"}
	// MemoryMB is "jean2": {"memoryMB"}: the tool's own memory cap per worker, 0 for the
	// host's default.
	MemoryMB int
	// InstallScripts is "jean2": {"installScripts": true}: the dependencies' install scripts
	// must run. They do only once a person approved it (Options.InstallScripts); otherwise
	// every install passes --ignore-scripts.
	InstallScripts bool
}

// Bounds of "jean2": {"memoryMB"}.
const (
	MinMemoryMB = 64
	MaxMemoryMB = 65536
)

// Discover lists the tool folders directly under toolsDir, sorted by name. Hidden names and
// names ending in ".staging" or ".previous" (install scratch space) are skipped; a symlink to
// a directory counts as a folder. A folder that is not a usable tool is listed with Err set.
// A toolsDir that does not exist holds no tools and is not an error.
func Discover(toolsDir string) ([]Folder, error) {
	abs, err := filepath.Abs(toolsDir)
	if err != nil {
		return nil, fmt.Errorf("discover tools in %s: %w", toolsDir, err)
	}
	entries, err := os.ReadDir(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("discover tools in %s: %w", abs, err)
	}
	var folders []Folder
	for _, e := range entries {
		name := e.Name()
		if !IsToolFolderName(name) {
			continue
		}
		dir := filepath.Join(abs, name)
		if !e.IsDir() {
			if e.Type()&fs.ModeSymlink == 0 {
				continue
			}
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				continue
			}
		}
		folders = append(folders, Inspect(dir))
	}
	sort.Slice(folders, func(i, j int) bool { return folders[i].Name < folders[j].Name })
	return folders, nil
}

// IsToolFolderName reports whether a directory of that name under the tools directory is a
// tool folder (not hidden, not install scratch space).
func IsToolFolderName(name string) bool {
	return name != "" && !strings.HasPrefix(name, ".") &&
		!strings.HasSuffix(name, ".staging") && !strings.HasSuffix(name, ".previous")
}

// Inspect reads one tool folder: its kind, entry, package.json, version and runtime
// preference. Problems are reported in the returned Folder's Err.
func Inspect(dir string) Folder {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	f := Folder{Name: filepath.Base(dir), Dir: dir, Kind: KindJS}
	fail := func(file, format string, args ...any) Folder {
		f.Err = &Error{Folder: f.Name, Stage: StageDiscover, File: file, Msg: fmt.Sprintf(format, args...)}
		return f
	}

	pkg, perr := readPackage(dir)
	if perr != nil {
		perr.Folder = f.Name
		f.Err = perr
		return f
	}
	f.Package = pkg
	if pkg != nil {
		f.RuntimePreference = pkg.Runtime
	}

	version, verr := readVersion(dir, pkg)
	if verr != nil {
		verr.Folder = f.Name
		f.Err = verr
		return f
	}
	f.Version = version

	jsEntry, missingMain := "", ""
	if pkg != nil && pkg.Main != "" {
		main, err := cleanEntry(pkg.Main)
		if err != nil {
			return fail("package.json", "\"main\" %q %v", pkg.Main, err)
		}
		if isRegularFile(filepath.Join(dir, filepath.FromSlash(main))) {
			jsEntry = main
		} else {
			// npm init writes "main": "index.js" whether or not it exists; a tool.ts beside it
			// is what the author meant.
			missingMain = main
		}
	}
	if jsEntry == "" {
		for _, c := range entryCandidates {
			if isRegularFile(filepath.Join(dir, c)) {
				jsEntry = c
				break
			}
		}
	}
	hasGo := isRegularFile(filepath.Join(dir, "tool.go"))
	hasGoMod := isRegularFile(filepath.Join(dir, "go.mod"))

	switch {
	case hasGo && hasGoMod && jsEntry != "":
		return fail("", "both %s and tool.go in %s: a folder holds one tool; keep one of them", jsEntry, dir)
	case hasGo && hasGoMod:
		f.Kind, f.Entry = KindGo, "tool.go"
		return f
	case jsEntry != "":
		f.Entry = jsEntry
		return f
	case missingMain != "":
		return fail("package.json", "\"main\" names %s, which is not a file in %s (and there is no tool.ts or tool.js)", missingMain, dir)
	case hasGo:
		return fail("tool.go", "tool.go needs a go.mod beside it in %s (run: go mod init <name>)", dir)
	}
	return fail("", "no tool.ts, tool.js or tool.go in %s", dir)
}

// cleanEntry checks an entry named by package.json "main": relative, inside the folder, a
// TypeScript or JavaScript file.
func cleanEntry(main string) (string, error) {
	p := strings.ReplaceAll(main, "\\", "/")
	if path.IsAbs(p) || filepath.IsAbs(main) {
		return "", fmt.Errorf("is absolute: name a file inside the tool folder")
	}
	p = path.Clean(p)
	if p == "." || p == ".." || strings.HasPrefix(p, "../") {
		return "", fmt.Errorf("leaves the tool folder: name a file inside it")
	}
	if strings.HasPrefix(p, "node_modules/") {
		return "", fmt.Errorf("points into node_modules: name the tool's own file")
	}
	if !entryExtensions[strings.ToLower(path.Ext(p))] {
		return "", fmt.Errorf("is not a TypeScript or JavaScript file (.ts, .mts, .js, .mjs …)")
	}
	return p, nil
}

func isRegularFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// readPackage reads package.json; nil without one.
func readPackage(dir string) (*Package, *Error) {
	data, err := fsutil.ReadLimited(filepath.Join(dir, "package.json"), maxPackageJSON)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &Error{Stage: StageDiscover, File: "package.json", Msg: err.Error(), Err: err}
	}
	return parsePackage(data)
}

func parsePackage(data []byte) (*Package, *Error) {
	perr := func(format string, args ...any) *Error {
		return &Error{Stage: StageDiscover, File: "package.json", Msg: fmt.Sprintf(format, args...)}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		e := perr("not valid JSON: %v", err)
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			e.Line, e.Column = lineColumn(data, syn.Offset)
		}
		if fields == nil && !errors.As(err, &syn) {
			e.Msg = "must be a JSON object: " + err.Error()
		}
		return nil, e
	}
	if fields == nil {
		return nil, perr("must be a JSON object, not null")
	}
	p := &Package{}
	for key, dst := range map[string]*string{"name": &p.Name, "version": &p.Version, "type": &p.Type, "main": &p.Main} {
		raw, ok := fields[key]
		if !ok || isJSONNull(raw) {
			continue
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			return nil, perr("%q must be a string, got %s", key, jsonKind(raw))
		}
	}
	var depErr *Error
	if p.Dependencies, depErr = parseDeps(fields, "dependencies"); depErr != nil {
		return nil, depErr
	}
	if p.OptionalDependencies, depErr = parseDeps(fields, "optionalDependencies"); depErr != nil {
		return nil, depErr
	}
	if raw, ok := fields["overrides"]; ok && !isJSONNull(raw) {
		p.Overrides = raw
	}
	if raw, ok := fields["jean2"]; ok && !isJSONNull(raw) {
		var cfg map[string]json.RawMessage
		if err := json.Unmarshal(raw, &cfg); err != nil {
			return nil, perr(`"jean2" must be an object like {"runtime": "node"}, got %s`, jsonKind(raw))
		}
		if rt, ok := cfg["runtime"]; ok && !isJSONNull(rt) {
			if err := json.Unmarshal(rt, &p.Runtime); err != nil || (p.Runtime != RuntimeNode && p.Runtime != RuntimeBun) {
				return nil, perr(`"jean2"."runtime" is %s: use "node" or "bun"`, string(rt))
			}
		}
		if mem, ok := cfg["memoryMB"]; ok && !isJSONNull(mem) {
			if err := json.Unmarshal(mem, &p.MemoryMB); err != nil || p.MemoryMB < MinMemoryMB || p.MemoryMB > MaxMemoryMB {
				return nil, perr(`"jean2"."memoryMB" is %s: give a whole number of megabytes from %d to %d`, string(mem), MinMemoryMB, MaxMemoryMB)
			}
		}
		if scripts, ok := cfg["installScripts"]; ok && !isJSONNull(scripts) {
			if err := json.Unmarshal(scripts, &p.InstallScripts); err != nil {
				return nil, perr(`"jean2"."installScripts" is %s: use true or false`, string(scripts))
			}
		}
	}
	return p, nil
}

func parseDeps(fields map[string]json.RawMessage, key string) (map[string]string, *Error) {
	raw, ok := fields[key]
	if !ok || isJSONNull(raw) {
		return nil, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, &Error{Stage: StageDiscover, File: "package.json", Msg: fmt.Sprintf("%q must be an object of package names and versions, got %s", key, jsonKind(raw))}
	}
	deps := make(map[string]string, len(obj))
	for name, v := range obj {
		var spec string
		if err := json.Unmarshal(v, &spec); err != nil {
			return nil, &Error{Stage: StageDiscover, File: "package.json", Msg: fmt.Sprintf("%q: the version of %q must be a string, got %s", key, name, jsonKind(v))}
		}
		if !validPackageName(name) {
			return nil, &Error{Stage: StageDiscover, File: "package.json", Msg: fmt.Sprintf("%q: %q is not a valid npm package name", key, name)}
		}
		deps[name] = spec
	}
	return deps, nil
}

// npm's rules, in short: lower-case, URL-safe, an optional @scope/, no leading dot or
// underscore, at most 214 characters.
var packageNamePattern = regexp.MustCompile(`^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*$`)

func validPackageName(name string) bool {
	return len(name) <= 214 && packageNamePattern.MatchString(strings.ToLower(name))
}

func isJSONNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func jsonKind(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "nothing"
	}
	switch t[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// lineColumn turns a byte offset into a 1-based line and column (in characters).
func lineColumn(data []byte, offset int64) (int, int) {
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	if offset < 1 {
		return 1, 1
	}
	before := data[:offset-1]
	line := bytes.Count(before, []byte{'\n'}) + 1
	start := bytes.LastIndexByte(before, '\n') + 1
	return line, len([]rune(string(before[start:]))) + 1
}

var semverPattern = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$`)

// readVersion returns VERSION's semantic version, else package.json's, else "".
func readVersion(dir string, pkg *Package) (string, *Error) {
	data, err := fsutil.ReadLimited(filepath.Join(dir, "VERSION"), maxVersionFile)
	switch {
	case err == nil:
		v := strings.TrimPrefix(strings.TrimSpace(string(data)), "v")
		if !semverPattern.MatchString(v) {
			return "", &Error{Stage: StageDiscover, File: "VERSION", Msg: fmt.Sprintf("%q is not a semantic version: write one like 1.0.0", strings.TrimSpace(string(data)))}
		}
		return v, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", &Error{Stage: StageDiscover, File: "VERSION", Msg: err.Error(), Err: err}
	}
	if pkg == nil || pkg.Version == "" {
		return "", nil
	}
	if !semverPattern.MatchString(pkg.Version) {
		return "", &Error{Stage: StageDiscover, File: "package.json", Msg: fmt.Sprintf("\"version\" %q is not a semantic version: write one like 1.0.0", pkg.Version)}
	}
	return pkg.Version, nil
}

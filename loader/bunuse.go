package loader

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// BunUse says why a bundle needs Bun: what it uses (a bun:* module, or the Bun global) and
// where (file:line in the tool's folder, "" when no source line names it).
type BunUse struct {
	What  string // "bun:sqlite", or "Bun.spawn"
	Where string // "tool.ts:3"
}

func (u BunUse) String() string {
	if u.Where == "" {
		return u.What
	}
	return u.What + " at " + u.Where
}

// A bun:* module the bundle imports: esbuild keeps them external, so each import, dynamic
// import or require survives in the bundle with its specifier in quotes.
var bunImport = regexp.MustCompile(`(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s*|\brequire\s*\(\s*)["'](bun(?::[A-Za-z0-9_/.-]+)?)["']`)

// A member of the Bun global (Bun.spawn, Bun.file…), looked for in the tool's own sources,
// never in node_modules: a library that tests for Bun and falls back works on Node.
var bunGlobal = regexp.MustCompile(`(?:^|[^.\w$])(Bun\.[A-Za-z_$][\w$]*)`)

// BunUsage reports whether the bundle at path needs Bun: it imports a bun:* module, or the
// tool's own code (not its dependencies) uses the Bun global. The first use found is
// returned, located in the sources its inline source map names; nil when the bundle runs
// on Node. Reading the bundle costs one pass over it, once per loaded version.
func BunUsage(bundlePath, folder string) (*BunUse, error) {
	code, err := os.ReadFile(bundlePath)
	if err != nil {
		return nil, fmt.Errorf("check %s for Bun APIs: %w", bundlePath, err)
	}
	sources := mapSources(code, filepath.Dir(bundlePath))
	if m := bunImport.FindSubmatch(stripSourceMap(code)); m != nil {
		spec := string(m[1])
		quoted := regexp.MustCompile(`["']` + regexp.QuoteMeta(spec) + `["']`)
		return &BunUse{What: spec, Where: findLine(folder, sources, false, func(line string) (string, bool) {
			return spec, quoted.MatchString(line)
		})}, nil
	}
	found := ""
	where := findLine(folder, sources, true, func(line string) (string, bool) {
		if m := bunGlobal.FindStringSubmatch(codeOf(line)); m != nil {
			found = m[1]
			return m[1], true
		}
		return "", false
	})
	if found == "" {
		return nil, nil
	}
	return &BunUse{What: found, Where: where}, nil
}

// stripSourceMap drops the inline source map comment, whose base64 could spell anything.
func stripSourceMap(code []byte) []byte {
	if i := bytes.LastIndex(code, []byte("\n//# sourceMappingURL=")); i >= 0 {
		return code[:i]
	}
	return code
}

// mapSources returns the absolute paths of the sources the bundle's inline source map
// names (esbuild writes them relative to the bundle's folder), skipping the host's SDK.
func mapSources(code []byte, dir string) []string {
	const marker = "//# sourceMappingURL=data:application/json;base64,"
	i := bytes.LastIndex(code, []byte(marker))
	if i < 0 {
		return nil
	}
	data := bytes.TrimSpace(code[i+len(marker):])
	raw, err := base64.StdEncoding.DecodeString(string(data))
	if err != nil {
		return nil
	}
	var sm struct {
		Sources []string `json:"sources"`
	}
	if json.Unmarshal(raw, &sm) != nil {
		return nil
	}
	out := make([]string, 0, len(sm.Sources))
	for _, s := range sm.Sources {
		if strings.Contains(s, ":") && !strings.HasPrefix(s, "file:") {
			continue // the SDK's namespace, not a file
		}
		s = strings.TrimPrefix(s, "file://")
		if !filepath.IsAbs(s) {
			s = filepath.Join(dir, filepath.FromSlash(s))
		}
		out = append(out, filepath.Clean(s))
	}
	return out
}

// findLine returns "file:line" of the first line of sources that match accepts (a source
// under node_modules is skipped when own is set), the file relative to folder; "".
func findLine(folder string, sources []string, own bool, match func(string) (string, bool)) string {
	for _, src := range sources {
		inModules := strings.Contains(filepath.ToSlash(src), "/node_modules/")
		if own && inModules {
			continue
		}
		if where := scanFile(folder, src, match); where != "" {
			return where
		}
	}
	return ""
}

func scanFile(folder, src string, match func(string) (string, bool)) string {
	f, err := os.Open(src)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for n := 1; sc.Scan(); n++ {
		if _, ok := match(sc.Text()); ok {
			return displayName(folder, src) + ":" + fmt.Sprint(n)
		}
	}
	return ""
}

// displayName is src as a person finds it: relative to the tool folder (node_modules/…
// for a dependency), else as it is.
func displayName(folder, src string) string {
	for _, dir := range []string{folder, realDir(folder)} {
		if rel, err := filepath.Rel(dir, src); err == nil && !strings.HasPrefix(rel, "..") {
			return filepath.ToSlash(rel)
		}
	}
	return src
}

func realDir(dir string) string {
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		return r
	}
	return dir
}

// codeOf drops a line's // comment and quoted strings, so that "Bun.spawn" in a comment or
// a message does not count as a use (block comments spanning lines still do: rare, and the
// error then points at the line).
func codeOf(line string) string {
	var b strings.Builder
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'' || c == '`':
			quote = c
		case c == '/' && i+1 < len(line) && line[i+1] == '/':
			return b.String()
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

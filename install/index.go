package install

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/jean2/jean2/host"
)

// IndexFormat is the only tool index format this version reads.
const IndexFormat = 3

// DefaultURLTemplate builds a tool's archive URL when the index gives no template.
const DefaultURLTemplate = "{baseUrl}/{name}/{version}.tar.gz"

// Index is a tool repository's list of tools, in the original system's format:
//
//	{"version": 3, "format"?: "source",
//	 "registry": {"baseUrl": "https://…", "urlTemplate": "{baseUrl}/{name}/{version}.tar.gz",
//	              "versionUrlTemplate"?: "https://…/{name}/VERSION"},
//	 "tools": [{"name", "description", "version"?, "category"?, "recommended"?, "sha256"?,
//	            "envVars"?: [{"name", "required"?, "sensitive"?}]}]}
type Index struct {
	Version  int           `json:"version"`
	Registry IndexRegistry `json:"registry"`
	Tools    []IndexTool   `json:"tools"`

	// Location is where the index was read from (a URL or an absolute file path); archive
	// URLs that are relative are resolved against it.
	Location string `json:"-"`
	// Problems lists entries that were left out, and why.
	Problems []string `json:"-"`
}

// IndexRegistry says where archives live.
type IndexRegistry struct {
	BaseURL     string `json:"baseUrl"`
	URLTemplate string `json:"urlTemplate"`
	// VersionURLTemplate locates a file holding a tool's latest version, for entries that
	// give none (jean2's own index: a VERSION file per tool beside its sources).
	VersionURLTemplate string `json:"versionUrlTemplate,omitempty"`
}

// IndexTool is one tool of the index.
type IndexTool struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Version     string   `json:"version,omitempty"`
	Category    string   `json:"category,omitempty"`
	Recommended bool     `json:"recommended,omitempty"`
	SHA256      string   `json:"sha256,omitempty"`
	EnvVars     []EnvVar `json:"envVars,omitempty"`
}

// EnvVar is a variable a tool needs, as the index describes it.
type EnvVar struct {
	Name      string `json:"name"`
	Required  bool   `json:"required,omitempty"`
	Sensitive bool   `json:"sensitive,omitempty"`
}

// maxIndexBytes bounds an index; a real one is a few hundred KiB at most.
const maxIndexBytes = 8 << 20

var sha256Pattern = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)

// ParseIndex reads an index. A wrong format version is an error; a malformed entry is left
// out and named in Problems, so one bad entry does not make every tool uninstallable.
func ParseIndex(data []byte, location string) (*Index, error) {
	var probe struct {
		Version json.RawMessage `json:"version"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("tool index %s is not a JSON object: %w", location, err)
	}
	var format int
	if err := json.Unmarshal(probe.Version, &format); err != nil || format != IndexFormat {
		got := strings.TrimSpace(string(probe.Version))
		if got == "" {
			got = "missing"
		}
		return nil, fmt.Errorf("tool index %s has format version %s; this jean2 reads version %d indexes only (update jean2, or point JEAN2_TOOL_REGISTRY_URL at a version %d index)", location, got, IndexFormat, IndexFormat)
	}
	var raw struct {
		Registry IndexRegistry     `json:"registry"`
		Tools    []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("tool index %s: %w", location, err)
	}
	idx := &Index{Version: format, Registry: raw.Registry, Location: location}
	if idx.Registry.URLTemplate == "" {
		idx.Registry.URLTemplate = DefaultURLTemplate
	}
	seen := map[string]bool{}
	for i, rawTool := range raw.Tools {
		var t IndexTool
		if err := json.Unmarshal(rawTool, &t); err != nil {
			idx.Problems = append(idx.Problems, fmt.Sprintf("entry %d: %v", i, err))
			continue
		}
		if err := checkIndexTool(t); err != nil {
			idx.Problems = append(idx.Problems, fmt.Sprintf("entry %d (%q): %v", i, t.Name, err))
			continue
		}
		if seen[t.Name] {
			idx.Problems = append(idx.Problems, fmt.Sprintf("entry %d: %q is listed twice; the first one is used", i, t.Name))
			continue
		}
		seen[t.Name] = true
		t.SHA256 = strings.ToLower(t.SHA256)
		idx.Tools = append(idx.Tools, t)
	}
	return idx, nil
}

func checkIndexTool(t IndexTool) error {
	if err := CheckName(t.Name); err != nil {
		return err
	}
	if t.Version != "" && t.Version != "latest" {
		if _, err := ParseVersion(t.Version); err != nil {
			return err
		}
	}
	if t.SHA256 != "" && !sha256Pattern.MatchString(t.SHA256) {
		return fmt.Errorf("sha256 %q is not 64 hex digits", t.SHA256)
	}
	for _, v := range t.EnvVars {
		if v.Name == "" || strings.ContainsAny(v.Name, "=\x00") {
			return fmt.Errorf("envVars holds a malformed variable name %q", v.Name)
		}
	}
	return nil
}

// Tool finds a tool of the index by name.
func (idx *Index) Tool(name string) (IndexTool, bool) {
	for _, t := range idx.Tools {
		if t.Name == name {
			return t, true
		}
	}
	return IndexTool{}, false
}

// Names lists the index's tools, sorted.
func (idx *Index) Names() []string {
	names := make([]string, 0, len(idx.Tools))
	for _, t := range idx.Tools {
		names = append(names, t.Name)
	}
	sort.Strings(names)
	return names
}

// Search lists the tools whose name, description or category holds every word of query
// (case folded), in index order; an empty query lists them all.
func (idx *Index) Search(query string) []IndexTool {
	words := strings.Fields(strings.ToLower(query))
	var out []IndexTool
	for _, t := range idx.Tools {
		text := strings.ToLower(t.Name + " " + t.Description + " " + t.Category)
		match := true
		for _, w := range words {
			if !strings.Contains(text, w) {
				match = false
				break
			}
		}
		if match {
			out = append(out, t)
		}
	}
	return out
}

// Recommended lists the tools marked recommended, in index order.
func (idx *Index) Recommended() []string {
	var names []string
	for _, t := range idx.Tools {
		if t.Recommended {
			names = append(names, t.Name)
		}
	}
	return names
}

// ArchiveLocation expands the URL template for a tool: {baseUrl}, {name} and {version}
// ("latest" when the tool gives none). A relative result is resolved against the index's
// own location, so an index may sit beside its archives.
func (idx *Index) ArchiveLocation(t IndexTool) (string, error) {
	version := t.Version
	if version == "" {
		version = "latest"
	}
	tmpl := idx.Registry.URLTemplate
	if strings.Contains(tmpl, "{baseUrl}") && idx.Registry.BaseURL == "" && isURL(idx.Location) {
		// No base: archives sit beside the index.
		tmpl = strings.ReplaceAll(tmpl, "{baseUrl}/", "")
	}
	loc := strings.NewReplacer(
		"{baseUrl}", strings.TrimRight(idx.Registry.BaseURL, "/"),
		"{name}", url.PathEscape(t.Name),
		"{version}", url.PathEscape(version),
	).Replace(tmpl)
	if strings.Contains(loc, "{") {
		return "", fmt.Errorf("tool index %s: urlTemplate %q has a placeholder other than {baseUrl}, {name} and {version}", idx.Location, idx.Registry.URLTemplate)
	}
	return resolveAgainst(idx.Location, loc)
}

// VersionLocation expands versionUrlTemplate for a tool ("" when the index has none).
func (idx *Index) VersionLocation(name string) (string, error) {
	tmpl := idx.Registry.VersionURLTemplate
	if tmpl == "" {
		return "", nil
	}
	loc := strings.NewReplacer(
		"{baseUrl}", strings.TrimRight(idx.Registry.BaseURL, "/"),
		"{name}", url.PathEscape(name),
		"{version}", "",
	).Replace(tmpl)
	if strings.Contains(loc, "{") {
		return "", fmt.Errorf("tool index %s: versionUrlTemplate %q has a placeholder other than {baseUrl} and {name}", idx.Location, tmpl)
	}
	return resolveAgainst(idx.Location, loc)
}

// resolveAgainst resolves ref against base; either may be a URL or a file path.
func resolveAgainst(base, ref string) (string, error) {
	if isURL(ref) {
		return ref, nil
	}
	if isURL(base) && (filepath.IsAbs(ref) || strings.HasPrefix(strings.ToLower(ref), "file:")) {
		// An index on the web is someone else's file: what it names on this machine (a
		// folder, an archive) is not the index's to install (TestIndexAttackRemoteIndexNamesLocalPlaces).
		return "", fmt.Errorf("index %s names %q, which is not on the web: an index on the web installs only from the web", base, ref)
	}
	if filepath.IsAbs(ref) {
		return ref, nil
	}
	if strings.HasPrefix(ref, "file://") {
		return fileURLPath(ref)
	}
	if isURL(base) {
		b, err := url.Parse(base)
		if err != nil {
			return "", fmt.Errorf("index location %q: %w", base, err)
		}
		r, err := url.Parse(ref)
		if err != nil {
			return "", fmt.Errorf("archive location %q: %w", ref, err)
		}
		return b.ResolveReference(r).String(), nil
	}
	if base == "" {
		return filepath.Abs(ref)
	}
	return filepath.Join(filepath.Dir(base), filepath.FromSlash(ref)), nil
}

func isURL(s string) bool {
	l := strings.ToLower(s)
	return strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://")
}

func fileURLPath(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Host != "" && u.Host != "localhost") {
		return "", fmt.Errorf("%q is not a local file URL", s)
	}
	return filepath.FromSlash(u.Path), nil
}

// ConfigFile is $JEAN2_HOME/config.json.
func ConfigFile(l host.Layout) string { return filepath.Join(l.Home, "config.json") }

// IndexLocation says where the tool index is: JEAN2_TOOL_REGISTRY_URL, else the
// "toolRegistryUrl" of $JEAN2_HOME/config.json, else DefaultIndexURL (jean2's own
// catalogue). An explicit "toolRegistryUrl": "" turns the index off and gives "" (a machine
// that must not reach GitHub). A relative file path is made absolute.
func IndexLocation(getenv func(string) string, l host.Layout) (string, error) {
	loc := strings.TrimSpace(getenv("JEAN2_TOOL_REGISTRY_URL"))
	if loc == "" {
		cfgPath := ConfigFile(l)
		data, err := os.ReadFile(cfgPath)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return DefaultIndexURL, nil
		case err != nil:
			return "", fmt.Errorf("read %s: %w", cfgPath, err)
		}
		var cfg struct {
			ToolRegistryURL *string `json:"toolRegistryUrl"`
		}
		if err := json.Unmarshal(data, &cfg); err != nil {
			return "", fmt.Errorf("%s is not valid JSON: %w", cfgPath, err)
		}
		if cfg.ToolRegistryURL == nil {
			return DefaultIndexURL, nil
		}
		loc = strings.TrimSpace(*cfg.ToolRegistryURL)
	}
	return normalizeLocation(loc)
}

// normalizeLocation turns file:// URLs and relative paths into absolute paths and leaves
// http(s) URLs alone.
func normalizeLocation(loc string) (string, error) {
	switch {
	case loc == "" || isURL(loc):
		return loc, nil
	case strings.HasPrefix(loc, "file://"):
		return fileURLPath(loc)
	case strings.Contains(loc, "://"):
		return "", fmt.Errorf("%q: only http, https and file locations are supported", loc)
	}
	return filepath.Abs(loc)
}

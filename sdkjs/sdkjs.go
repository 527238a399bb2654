// Package sdkjs owns the JavaScript SDK modules that the jean2 binary carries: @jean2/sdk,
// @jxsuite/ai and @jxsuite/ai/tools. They are published to no registry; the bundler takes
// their source from Module, the bundle cache key includes Hash, and WriteTypes drops them
// into a tool folder's node_modules so an editor resolves the imports.
//
// All three specifiers are one module (the same runtime helpers and the same types), so a
// tool that imports two of them gets one copy in its bundle. The lists the module shares
// with the Go host (sensitive path patterns, blocked roots, the language table) are filled
// in from packages policy and tool when the module is rendered, so they cannot drift apart.
package sdkjs

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/jean2/jean2/internal/fsutil"
	"github.com/jean2/jean2/internal/textdist"
	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/tool"
)

//go:embed js/sdk.mjs
var runtimeTemplate string

//go:embed js/sdk.d.ts
var sdkTypes string

// catalogueTypes are the names of jean2's own SDK that a tool written for it imports, in a
// file of their own: most are other names for sdkTypes', and interfaces merge with them.
//
//go:embed js/catalogue.d.ts
var catalogueTypes string

// typesSource is the module's one declaration file.
var typesSource = sdkTypes + catalogueTypes

// Version is the version the embedded packages report in their package.json.
const Version = "0.9.0"

// Import specifiers the host provides.
const (
	SpecSDK     = "@jean2/sdk"
	SpecJx      = "@jxsuite/ai"
	SpecJxTools = "@jxsuite/ai/tools"
)

// ModuleID is the one module every specifier resolves to; a bundler can use it as the
// module's path so that two specifiers share one copy.
const ModuleID = "jean2-sdk.mjs"

// Module is the JavaScript module behind an import specifier.
type Module struct {
	Specifier string // as imported
	ID        string // the module's identity; equal IDs are one module
	Source    string // ES module source
}

// Specifiers lists the import specifiers the host provides, sorted.
func Specifiers() []string { return []string{SpecSDK, SpecJx, SpecJxTools} }

// Owned reports whether a bare import specifier lies in a namespace the host owns
// (@jean2/sdk and its subpaths, and every @jxsuite package), so a bundler must never look
// for it in node_modules and an installer must never fetch it.
func Owned(specifier string) bool {
	return specifier == SpecSDK || strings.HasPrefix(specifier, SpecSDK+"/") || strings.HasPrefix(specifier, "@jxsuite/")
}

// IsHostPackage reports whether a package.json dependency name is provided by the host
// (and so is not installed): @jean2/sdk and any @jxsuite/* package.
func IsHostPackage(name string) bool {
	return name == SpecSDK || strings.HasPrefix(name, "@jxsuite/")
}

// Lookup returns the module behind specifier, or false when the host does not provide it.
func Lookup(specifier string) (Module, bool) {
	switch specifier {
	case SpecSDK, SpecJx, SpecJxTools:
		return Module{Specifier: specifier, ID: ModuleID, Source: rendered().runtime}, true
	}
	return Module{}, false
}

// Runtime is the rendered ES module source (the same for every specifier).
func Runtime() string { return rendered().runtime }

// Types is the .d.ts source (the same for every specifier).
func Types() string { return typesSource }

// Hash identifies the whole embedded SDK (runtime, types, package metadata); it belongs in
// every bundle cache key, so a new binary with a changed SDK rebundles every tool.
func Hash() string { return rendered().hash }

type renderedSDK struct {
	runtime string
	hash    string
}

// rendered memoizes the constant SDK text; computing it reads only embedded data and the
// fixed tables of packages policy and tool.
var rendered = sync.OnceValue(func() renderedSDK {
	runtime := renderRuntime(runtimeTemplate)
	h := sha256.New()
	for _, part := range []string{Version, runtime, typesSource} {
		fmt.Fprintf(h, "%d:%s\n", len(part), part)
	}
	return renderedSDK{runtime: runtime, hash: hex.EncodeToString(h.Sum(nil))}
})

func renderRuntime(template string) string {
	languages := tool.Languages()
	keys := make([]string, 0, len(languages))
	for k := range languages {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var lang strings.Builder
	lang.WriteString("{")
	for i, k := range keys {
		if i > 0 {
			lang.WriteString(", ")
		}
		lang.WriteString(mustJSON(k) + ": " + mustJSON(languages[k]))
	}
	lang.WriteString("}")
	r := strings.NewReplacer(
		"/*@jean2:sensitive*/[]", mustJSON(policy.SensitivePatterns()),
		"/*@jean2:blocked*/[]", mustJSON(policy.BlockedRoots()),
		"/*@jean2:languages*/{}", lang.String(),
	)
	return r.Replace(template)
}

func mustJSON(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		// Only strings and string slices are marshalled here.
		panic(fmt.Sprintf("sdkjs: marshal %v: %v", v, err))
	}
	return string(raw)
}

// WriteTypes writes node_modules/@jean2/sdk and node_modules/@jxsuite/ai into dir (a tool
// folder): package.json with "types" and "exports", the .d.ts and the runtime module, so an
// editor (and tsc) resolves the SDK imports. Existing files of those two packages are
// replaced; nothing else in node_modules is touched.
func WriteTypes(dir string) error {
	return writePackages(filepath.Join(dir, "node_modules"))
}

// EditorTypesDir is where WriteEditorTypes puts the SDK packages in a tool folder: out of
// node_modules, which npm owns (an `npm install` removes packages it did not install).
const EditorTypesDir = ".jean2/types"

// WriteEditorTypes writes the SDK packages (package.json, .d.ts and runtime module) under
// dir/.jean2/types/@jean2/sdk and dir/.jean2/types/@jxsuite/ai, for an editor and tsc to
// resolve the SDK imports through a tsconfig's "paths" (EditorPaths), and for a
// package.json to list "@jean2/sdk": "file:.jean2/types/@jean2/sdk" without breaking
// `npm install`.
func WriteEditorTypes(dir string) error {
	return writePackages(filepath.Join(dir, filepath.FromSlash(EditorTypesDir)))
}

// EditorPaths are the tsconfig "paths" that point the SDK's specifiers at
// WriteEditorTypes' files.
func EditorPaths() map[string][]string {
	base := "./" + EditorTypesDir + "/"
	return map[string][]string{
		SpecSDK:     {base + "@jean2/sdk/index.d.ts"},
		SpecJx:      {base + "@jxsuite/ai/index.d.ts"},
		SpecJxTools: {base + "@jxsuite/ai/tools.d.ts"},
	}
}

// EditorDependency is the package.json entry that lists the SDK for npm: a local folder
// WriteEditorTypes fills, so `npm install` links it instead of asking a registry that has
// no such package (E404).
func EditorDependency() string { return "file:" + EditorTypesDir + "/@jean2/sdk" }

func writePackages(base string) error {
	runtime := Runtime()
	sdkPkg := map[string]any{
		"name": SpecSDK, "version": Version, "private": true, "type": "module",
		"description": "Provided by the jean2 host; written by jean2 for editors. Not installed from a registry.",
		"main":        "./index.mjs", "types": "./index.d.ts",
		"exports": map[string]any{
			".":              map[string]string{"types": "./index.d.ts", "import": "./index.mjs", "default": "./index.mjs"},
			"./package.json": "./package.json",
		},
	}
	jxPkg := map[string]any{
		"name": SpecJx, "version": Version, "private": true, "type": "module",
		"description": "Provided by the jean2 host; written by jean2 for editors. Not installed from a registry.",
		"main":        "./index.mjs", "types": "./index.d.ts",
		"typesVersions": map[string]any{"*": map[string][]string{"tools": {"./tools.d.ts"}}},
		"exports": map[string]any{
			".":              map[string]string{"types": "./index.d.ts", "import": "./index.mjs", "default": "./index.mjs"},
			"./tools":        map[string]string{"types": "./tools.d.ts", "import": "./tools.mjs", "default": "./tools.mjs"},
			"./package.json": "./package.json",
		},
	}
	packages := []struct {
		dir   string
		files map[string]string
	}{
		{filepath.Join(base, "@jean2", "sdk"), map[string]string{
			"package.json": indentJSON(sdkPkg), "index.d.ts": typesSource, "index.mjs": runtime,
		}},
		{filepath.Join(base, "@jxsuite", "ai"), map[string]string{
			"package.json": indentJSON(jxPkg), "index.d.ts": typesSource, "index.mjs": runtime,
			"tools.d.ts": typesSource, "tools.mjs": runtime,
		}},
	}
	for _, p := range packages {
		if err := os.MkdirAll(p.dir, 0o755); err != nil {
			return fmt.Errorf("write sdk types: %w", err)
		}
		for name, content := range p.files {
			if err := fsutil.WriteFileAtomic(filepath.Join(p.dir, name), []byte(content)); err != nil {
				return fmt.Errorf("write sdk types: %w", err)
			}
		}
	}
	return nil
}

func indentJSON(v any) string {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(fmt.Sprintf("sdkjs: marshal package.json: %v", err))
	}
	return string(raw) + "\n"
}

// exportDecl finds the module's own export declarations (the module has no re-exports).
var exportDecl = regexp.MustCompile(`(?m)^export\s+(?:async\s+)?(?:function\*?|const|let|class)\s+([A-Za-z_$][\w$]*)`)

// Exports lists the names the SDK module exports, sorted: what a tool may import from it.
func Exports() []string {
	var names []string
	for _, m := range exportDecl.FindAllStringSubmatch(runtimeTemplate, -1) {
		names = append(names, m[1])
	}
	sort.Strings(names)
	return names
}

// Closest is the export nearest to name (by edit distance, ignoring case), for "did you
// mean" in an error; "" when none is near enough to be a likely typo.
func Closest(name string) string {
	best, bestD := "", -1
	for _, e := range Exports() {
		d := textdist.Distance(strings.ToLower(name), strings.ToLower(e))
		if bestD < 0 || d < bestD {
			best, bestD = e, d
		}
	}
	if bestD < 0 || bestD > max(2, len(name)/3) {
		return ""
	}
	return best
}

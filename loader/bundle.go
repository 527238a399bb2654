package loader

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/evanw/esbuild/pkg/api"

	"github.com/jean2/jean2/internal/fsutil"
	"github.com/jean2/jean2/sdkjs"
)

// sdkNamespace is where the plugin puts the embedded SDK module.
const sdkNamespace = "jean2-sdk"

// buildRequest is one bundling of a tool folder.
type buildRequest struct {
	folder  Folder
	outfile string // the bundle's final path: source map paths are relative to it
	// confidential names files that must not be bundled (Options.Confidential); nil: none.
	confidential func(path string) bool
}

// buildResult is the bundle, or the errors esbuild reported.
type buildResult struct {
	code     []byte
	errors   []api.Message
	warnings []api.Message
}

// buildFunc bundles; the Loader holds one so tests can count builds.
type buildFunc func(buildRequest) buildResult

// esbuildBundle bundles the entry and its node_modules into one ES module for Node 20.
func esbuildBundle(req buildRequest) buildResult {
	f := req.folder
	// esbuild follows symlinks; working from the real folder keeps error locations relative
	// to it and source maps pointing at the files that really run.
	dir := f.Dir
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	entry := filepath.Join(dir, filepath.FromSlash(f.Entry))
	entryURL := (&url.URL{Scheme: "file", Path: filepath.ToSlash(entry)}).String()
	// Dependencies that require() node builtins (or load native modules at run time) get a
	// require that resolves from the tool folder, as it would if the tool ran unbundled.
	tsconfig, err := bundleTsconfig(dir)
	if err != nil {
		return buildResult{errors: []api.Message{{Text: err.Error()}}}
	}
	anchor := filepath.Join(dir, "package.json")
	banner := "import { createRequire as __jean2CreateRequire } from \"node:module\";\n" +
		"const require = __jean2CreateRequire(" + jsString(anchor) + ");"
	result := api.Build(api.BuildOptions{
		EntryPoints:   []string{entry},
		AbsWorkingDir: dir,
		Outfile:       req.outfile,
		Bundle:        true,
		Write:         false,
		Format:        api.FormatESModule,
		Platform:      api.PlatformNode,
		Engines:       []api.Engine{{Name: api.EngineNode, Version: "20"}},
		Sourcemap:     api.SourceMapInline,
		// The map's sources are relative to the bundle's folder; with that folder as their
		// root they still name the tool's files wherever the bundle is linked (the host links
		// it into the folder of its tool's bundles, a level deeper).
		SourceRoot:     filepath.Dir(req.outfile) + "/",
		SourcesContent: api.SourcesContentExclude,
		Charset:        api.CharsetUTF8,
		LegalComments:  api.LegalCommentsNone,
		LogLevel:       api.LogLevelSilent,
		External:       []string{"node:*", "bun:*", "bun"},
		Banner:         map[string]string{"js": banner},
		// The bundle lives in the cache, not in the tool folder; a tool that finds its own
		// files through import.meta still finds them in its folder.
		Define: map[string]string{
			"import.meta.url":      jsString(entryURL),
			"import.meta.filename": jsString(entry),
			"import.meta.dirname":  jsString(filepath.Dir(entry)),
			// Bun's names for the last two (tools written for Bun, jean2's catalogue among them).
			"import.meta.dir":  jsString(filepath.Dir(entry)),
			"import.meta.path": jsString(entry),
		},
		TsconfigRaw: tsconfig,
		Plugins:     []api.Plugin{sdkPlugin(), folderGuard{dir: dir, confidential: req.confidential}.plugin()},
	})
	out := buildResult{errors: result.Errors, warnings: result.Warnings}
	for _, file := range result.OutputFiles {
		if strings.HasSuffix(file.Path, ".mjs") || strings.HasSuffix(file.Path, ".js") {
			out.code = file.Contents
		}
	}
	if len(out.errors) == 0 && out.code == nil {
		out.errors = []api.Message{{Text: "esbuild produced no output file"}}
	}
	return out
}

// sdkPlugin resolves the host's SDK packages to the embedded module, never to
// node_modules, and refuses other names in the host's namespaces with a precise message.
func sdkPlugin() api.Plugin {
	return api.Plugin{
		Name: "jean2-sdk",
		Setup: func(b api.PluginBuild) {
			b.OnResolve(api.OnResolveOptions{Filter: `^(@jean2/sdk|@jxsuite/)`}, func(args api.OnResolveArgs) (api.OnResolveResult, error) {
				if !sdkjs.Owned(args.Path) {
					return api.OnResolveResult{}, nil // e.g. @jean2/sdkx: an ordinary package
				}
				m, ok := sdkjs.Lookup(args.Path)
				if !ok {
					return api.OnResolveResult{}, fmt.Errorf("%q is not provided by the jean2 host: import %s", args.Path, strings.Join(sdkjs.Specifiers(), ", "))
				}
				return api.OnResolveResult{Path: m.ID, Namespace: sdkNamespace}, nil
			})
			b.OnLoad(api.OnLoadOptions{Filter: `.*`, Namespace: sdkNamespace}, func(args api.OnLoadArgs) (api.OnLoadResult, error) {
				src := sdkjs.Runtime()
				return api.OnLoadResult{Contents: &src, Loader: api.LoaderJS}, nil
			})
		},
	}
}

// outsideMsg is the end of every refusal of a file outside the tool folder.
const outsideMsg = "is outside the tool folder: a tool may only import files in its own folder or its node_modules"

// guardPass marks the guard's own resolutions, so that it does not check itself.
type guardPass struct{}

// folderGuard keeps a bundle to the tool's own files. Bundling runs in the host, outside the
// sandbox: whatever esbuild reads ends up in code the tool runs and may return, so an import
// of /proc/self/environ or of a file beside the folder would read it for the tool. Only files
// whose real path (symlinks resolved) lies in the folder, its node_modules included, and the
// embedded SDK may be resolved or loaded; node builtins and bun:* stay external.
type folderGuard struct {
	dir string // the folder's real path
	// confidential names files no bundle may hold even inside the folder (a tool folder that
	// lies in a credential folder); nil: none.
	confidential func(string) bool
}

// inside reports whether p's real path lies in the folder, and that real path.
func (g folderGuard) inside(p string) (string, bool) {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return p, false
	}
	return real, within(real, g.dir)
}

func within(p, root string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

func (g folderGuard) plugin() api.Plugin {
	return api.Plugin{
		Name: "jean2-guard",
		Setup: func(b api.PluginBuild) {
			// Every import is resolved here first, the way esbuild would (tsconfig paths,
			// package.json main, exports, imports and browser, symlinks), and refused when
			// the file it names is outside; the error then points at the import.
			b.OnResolve(api.OnResolveOptions{Filter: `.*`}, func(args api.OnResolveArgs) (api.OnResolveResult, error) {
				if _, self := args.PluginData.(guardPass); self {
					return api.OnResolveResult{}, nil
				}
				res := b.Resolve(args.Path, api.ResolveOptions{
					Importer: args.Importer, Namespace: args.Namespace, ResolveDir: args.ResolveDir,
					Kind: args.Kind, With: args.With, PluginData: guardPass{},
				})
				if len(res.Errors) > 0 {
					return api.OnResolveResult{}, nil // esbuild's own resolution reports it
				}
				if res.External || res.Namespace != "file" {
					return resolved(res), nil
				}
				if _, ok := g.inside(res.Path); !ok {
					if args.Kind == api.ResolveEntryPoint {
						entry := args.Path
						if rel, err := filepath.Rel(g.dir, entry); err == nil {
							entry = filepath.ToSlash(rel)
						}
						return api.OnResolveResult{}, fmt.Errorf("the entry %s %s", entry, outsideMsg)
					}
					return api.OnResolveResult{}, fmt.Errorf("import %q %s", args.Path, outsideMsg)
				}
				return resolved(res), nil
			})
			// Loading checks again, for what reaches a file without a resolution of its own
			// (a glob in a dynamic import), and keeps source maps to the folder: esbuild
			// reads the file a sourceMappingURL comment names to compose the bundle's map.
			b.OnLoad(api.OnLoadOptions{Filter: `.*`, Namespace: "file"}, func(args api.OnLoadArgs) (api.OnLoadResult, error) {
				real, ok := g.inside(args.Path)
				if !ok {
					return api.OnLoadResult{}, fmt.Errorf("%s %s", args.Path, outsideMsg)
				}
				if g.confidential != nil && g.confidential(real) {
					return api.OnLoadResult{}, fmt.Errorf("%s may not be imported: it lies in jean2's own folder or a credential folder, which no tool may read", real)
				}
				if err := g.checkSourceMaps(args.Path); err != nil {
					return api.OnLoadResult{}, err
				}
				return withModulePaths(args.Path)
			})
		},
	}
}

// moduleGlobals finds a use of CommonJS's __filename or __dirname.
var moduleGlobals = regexp.MustCompile(`\b__(?:file|dir)name\b`)

// leadingDirectives is what must stay first in a script: a #! line and "use strict".
var leadingDirectives = regexp.MustCompile(`^(?:#![^\n]*\n)?(?:\s*(?:'use strict'|"use strict");?)?`)

// withModulePaths gives a JavaScript file that uses __filename or __dirname their values.
// The bundle is an ES module, where neither exists ("__filename is not defined in ES module
// scope": the typescript package fails so); each file gets its own, as it would unbundled.
// Other files are left for esbuild to read.
func withModulePaths(path string) (api.OnLoadResult, error) {
	var loader api.Loader
	switch strings.ToLower(filepath.Ext(path)) {
	case ".js", ".cjs", ".mjs":
		loader = api.LoaderJS
	default:
		return api.OnLoadResult{}, nil
	}
	data, err := os.ReadFile(path)
	if err != nil || !moduleGlobals.Match(data) {
		return api.OnLoadResult{}, nil // esbuild reports an unreadable file itself
	}
	// On the first line, after what must lead, so the file's lines keep their numbers.
	decl := "var __filename = " + jsString(path) + ", __dirname = " + jsString(filepath.Dir(path)) + ";"
	at := len(leadingDirectives.Find(data))
	src := string(data[:at]) + decl + string(data[at:])
	return api.OnLoadResult{Contents: &src, Loader: loader, ResolveDir: filepath.Dir(path)}, nil
}

func resolved(res api.ResolveResult) api.OnResolveResult {
	side := api.SideEffectsTrue
	if !res.SideEffects {
		side = api.SideEffectsFalse
	}
	return api.OnResolveResult{
		Path: res.Path, External: res.External, SideEffects: side,
		Namespace: res.Namespace, Suffix: res.Suffix, PluginData: res.PluginData,
	}
}

// sourceMapComment finds the sourceMappingURL comments esbuild follows (//# and /*# forms).
var sourceMapComment = regexp.MustCompile(`[#@]\s*sourceMappingURL=([^\s'"*]+)`)

// checkSourceMaps refuses a file whose sourceMappingURL comment names a file outside the
// folder.
func (g folderGuard) checkSourceMaps(path string) error {
	data, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(data, []byte("sourceMappingURL")) {
		return nil // esbuild reports an unreadable file itself
	}
	for _, m := range sourceMapComment.FindAllSubmatch(data, -1) {
		ref := string(m[1])
		u, err := url.Parse(ref)
		if err != nil || (u.Scheme != "" && u.Scheme != "file") {
			continue // data: URLs carry their map; esbuild reads no other scheme
		}
		target := u.Path
		if u.Scheme == "" && !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(path), filepath.FromSlash(target))
		}
		if _, err := os.Lstat(target); errors.Is(err, fs.ErrNotExist) {
			continue // esbuild skips a missing map
		}
		if _, ok := g.inside(target); !ok {
			named := path
			if rel, err := filepath.Rel(g.dir, path); err == nil {
				named = filepath.ToSlash(rel)
			}
			return fmt.Errorf("source map %q (named in %s) %s", ref, named, outsideMsg)
		}
	}
	return nil
}

// bundleTsconfig is the tsconfig esbuild uses: the folder's own tsconfig.json (or
// jsconfig.json), read by the loader. Without it esbuild would look for tsconfig.json in the
// folder's parents too (a workspace's, whose "paths" and "extends" reach anywhere), and
// follow "extends" outside the folder, showing what it read in its errors. "{}" when the
// folder has none.
func bundleTsconfig(dir string) (string, error) {
	for _, name := range []string{"tsconfig.json", "jsconfig.json"} {
		p := filepath.Join(dir, name)
		st, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("%s: %v", name, err)
		}
		if !st.Mode().IsRegular() {
			continue // esbuild ignores a directory of that name too
		}
		if _, ok := (folderGuard{dir: dir}).inside(p); !ok {
			return "", fmt.Errorf("%s %s", name, outsideMsg)
		}
		data, err := fsutil.ReadLimited(p, 1<<20)
		if err != nil {
			return "", fmt.Errorf("%s: %v", name, err)
		}
		if bytes.Contains(data, []byte(`"extends"`)) {
			return "", fmt.Errorf(`%s: "extends" is not supported: a tool's %s is read alone (the file it extends may lie outside the tool folder); copy the options you need into it`, name, name)
		}
		return string(data), nil
	}
	return "{}", nil
}

func jsString(s string) string {
	raw, err := json.Marshal(s)
	if err != nil {
		panic(err) // a Go string always marshals
	}
	return string(raw)
}

// bundleError turns esbuild's first error into an *Error located in the tool's files.
func bundleError(f Folder, msgs []api.Message) *Error {
	m := msgs[0]
	if real, err := filepath.EvalSymlinks(f.Dir); err == nil {
		f.Dir = real
	}
	e := &Error{Folder: f.Name, Stage: StageBundle, Msg: m.Text}
	if m.PluginName != "" && strings.HasPrefix(m.Text, "[plugin ") {
		e.Msg = strings.TrimSpace(m.Text[strings.Index(m.Text, "]")+1:])
	}
	if msg, ok := sdkImportError(m); ok {
		e.Msg = msg
	}
	if loc := m.Location; loc != nil {
		e.File = locationFile(f.Dir, loc.File)
		e.Line = loc.Line
		e.Column = columnOf(loc.LineText, loc.Column)
		if spec, ok := unresolvedBare(m.Text); ok && !strings.HasPrefix(e.File, "node_modules/") {
			e.Msg += fmt.Sprintf(`: add %q to "dependencies" in package.json`, spec)
		}
	} else if e.File == "" && strings.Contains(m.Text, filepath.Join(f.Dir, filepath.FromSlash(f.Entry))) {
		e.File = f.Entry
	}
	if len(msgs) > 1 {
		e.Msg += fmt.Sprintf(" (and %d more error%s)", len(msgs)-1, plural(len(msgs)-1))
	}
	return e
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// locationFile makes esbuild's file name relative to the tool folder, slash-separated.
func locationFile(dir, file string) string {
	if file == "" {
		return ""
	}
	if filepath.IsAbs(file) {
		if rel, err := filepath.Rel(dir, file); err == nil && !strings.HasPrefix(rel, "..") {
			file = rel
		}
	}
	return filepath.ToSlash(file)
}

// columnOf turns esbuild's 0-based byte column into a 1-based column in characters, as
// editors count.
func columnOf(lineText string, byteCol int) int {
	if byteCol < 0 {
		return 0
	}
	if byteCol > len(lineText) {
		return byteCol + 1
	}
	return len([]rune(lineText[:byteCol])) + 1
}

// noSDKExport is esbuild's message for a name the SDK module does not export.
var noSDKExport = regexp.MustCompile(`^No matching export in "` + sdkNamespace + `:[^"]*" for import "([^"]+)"`)

// sdkImportError rewrites esbuild's error about a name the SDK does not export: it names
// the module as the tool imported it (not the bundler's internal name) and the closest
// export.
func sdkImportError(m api.Message) (string, bool) {
	sub := noSDKExport.FindStringSubmatch(m.Text)
	if sub == nil {
		return "", false
	}
	spec := sdkjs.SpecSDK
	if m.Location != nil {
		for _, s := range sdkjs.Specifiers() {
			if strings.Contains(m.Location.LineText, "'"+s+"'") || strings.Contains(m.Location.LineText, `"`+s+`"`) {
				spec = s // the longest that matches: @jxsuite/ai/tools after @jxsuite/ai
			}
		}
	}
	msg := fmt.Sprintf("%s has no export named %q", spec, sub[1])
	if c := sdkjs.Closest(sub[1]); c != "" {
		msg += fmt.Sprintf("; did you mean %q?", c)
	} else {
		msg += "; it exports " + strings.Join(sdkjs.Exports(), ", ")
	}
	return msg, true
}

// unresolvedBare reports the package name of a `Could not resolve "pkg/sub"` error about a
// bare import (not a relative or absolute path).
func unresolvedBare(text string) (string, bool) {
	rest, ok := strings.CutPrefix(text, `Could not resolve "`)
	if !ok {
		return "", false
	}
	spec, _, ok := strings.Cut(rest, `"`)
	if !ok || spec == "" || strings.HasPrefix(spec, ".") || strings.HasPrefix(spec, "/") || strings.Contains(spec, ":") {
		return "", false
	}
	parts := strings.SplitN(spec, "/", 3)
	if strings.HasPrefix(spec, "@") && len(parts) >= 2 {
		return parts[0] + "/" + parts[1], true
	}
	return parts[0], true
}

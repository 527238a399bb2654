package loader

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/evanw/esbuild/pkg/api"

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
	anchor := filepath.Join(dir, "package.json")
	banner := "import { createRequire as __jean2CreateRequire } from \"node:module\";\n" +
		"const require = __jean2CreateRequire(" + jsString(anchor) + ");"
	result := api.Build(api.BuildOptions{
		EntryPoints:    []string{entry},
		AbsWorkingDir:  dir,
		Outfile:        req.outfile,
		Bundle:         true,
		Write:          false,
		Format:         api.FormatESModule,
		Platform:       api.PlatformNode,
		Engines:        []api.Engine{{Name: api.EngineNode, Version: "20"}},
		Sourcemap:      api.SourceMapInline,
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
		},
		Plugins: append([]api.Plugin{sdkPlugin()}, guardPlugin(dir, req.confidential)...),
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

// guardPlugin refuses to load a confidential file into a bundle: bundling runs in the host,
// outside the sandbox, so an import is a way around it. Files of the tool's own folder are
// its own.
func guardPlugin(dir string, confidential func(string) bool) []api.Plugin {
	if confidential == nil {
		return nil
	}
	return []api.Plugin{{
		Name: "jean2-guard",
		Setup: func(b api.PluginBuild) {
			b.OnLoad(api.OnLoadOptions{Filter: `.*`, Namespace: "file"}, func(args api.OnLoadArgs) (api.OnLoadResult, error) {
				p := args.Path
				if real, err := filepath.EvalSymlinks(p); err == nil {
					p = real
				}
				if rel, err := filepath.Rel(dir, p); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
					return api.OnLoadResult{}, nil
				}
				if confidential(p) {
					return api.OnLoadResult{}, fmt.Errorf("%s may not be imported: it lies in jean2's own folder or a credential folder, which no tool may read", p)
				}
				return api.OnLoadResult{}, nil
			})
		},
	}}
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

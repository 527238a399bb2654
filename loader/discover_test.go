package loader

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDiscover(t *testing.T) {
	tools := t.TempDir()
	writeFiles(t, tools, map[string]string{
		"ts-tool/tool.ts":             "export const definition = {};",
		"js-tool/tool.js":             "export const definition = {};",
		"mts-tool/tool.mts":           "export {};",
		"mts-tool/tool.mjs":           "export {};",
		"main-tool/package.json":      `{"main": "src/index.ts", "version": "1.2.3"}`,
		"main-tool/src/index.ts":      "export {};",
		"main-tool/tool.ts":           "export {};",
		"npm-init/package.json":       `{"name": "npm-init", "main": "index.js"}`,
		"npm-init/tool.ts":            "export {};",
		"versioned/VERSION":           "v2.1.0\n",
		"versioned/package.json":      `{"version": "1.0.0", "jean2": {"runtime": "bun"}}`,
		"versioned/tool.ts":           "export {};",
		"pkg-version/package.json":    `{"version": "0.3.0-beta.1", "jean2": {"runtime": "node"}}`,
		"pkg-version/tool.js":         "export {};",
		"go-tool/tool.go":             "package main",
		"go-tool/go.mod":              "module x",
		"go-tool/VERSION":             "0.1.0",
		"go-no-mod/tool.go":           "package main",
		"both/tool.go":                "package main",
		"both/go.mod":                 "module x",
		"both/tool.ts":                "export {};",
		"empty/README.md":             "nothing here",
		"bad-json/package.json":       "{\n  \"name\": \"x\",\n  \"version\": 1.0.0\n}",
		"bad-json/tool.ts":            "export {};",
		"bad-runtime/package.json":    `{"jean2": {"runtime": "deno"}}`,
		"bad-runtime/tool.ts":         "export {};",
		"bad-deps/package.json":       `{"dependencies": {"is-number": 7}}`,
		"bad-deps/tool.ts":            "export {};",
		"bad-version/VERSION":         "latest",
		"bad-version/tool.ts":         "export {};",
		"escape-main/package.json":    `{"main": "../other/tool.ts"}`,
		"escape-main/tool.ts":         "export {};",
		"missing-main/package.json":   `{"main": "dist/tool.js"}`,
		"x.staging/tool.ts":           "export {};",
		"x.previous/tool.ts":          "export {};",
		".hidden/tool.ts":             "export {};",
		"not-a-folder.ts":             "export {};",
		"../elsewhere/linked/tool.ts": "export {};",
	})
	if err := os.Symlink(filepath.Join(tools, "..", "elsewhere", "linked"), filepath.Join(tools, "linked")); err != nil {
		t.Fatal(err)
	}
	folders, err := Discover(tools)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Folder{}
	var names []string
	for _, f := range folders {
		byName[f.Name] = f
		names = append(names, f.Name)
	}
	want := "bad-deps bad-json bad-runtime bad-version both empty escape-main go-no-mod go-tool js-tool linked main-tool missing-main mts-tool npm-init pkg-version ts-tool versioned"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("folders:\n got %s\nwant %s", got, want)
	}

	ok := []struct {
		name, kind, entry, version, runtime string
	}{
		{"ts-tool", KindJS, "tool.ts", "", ""},
		{"js-tool", KindJS, "tool.js", "", ""},
		{"mts-tool", KindJS, "tool.mts", "", ""},
		{"main-tool", KindJS, "src/index.ts", "1.2.3", ""},
		{"npm-init", KindJS, "tool.ts", "", ""},
		{"versioned", KindJS, "tool.ts", "2.1.0", RuntimeBun},
		{"pkg-version", KindJS, "tool.js", "0.3.0-beta.1", RuntimeNode},
		{"go-tool", KindGo, "tool.go", "0.1.0", ""},
		{"linked", KindJS, "tool.ts", "", ""},
	}
	for _, w := range ok {
		f := byName[w.name]
		if f.Err != nil {
			t.Errorf("%s: unexpected error %v", w.name, f.Err)
			continue
		}
		if f.Kind != w.kind || f.Entry != w.entry || f.Version != w.version || f.RuntimePreference != w.runtime {
			t.Errorf("%s: kind %q entry %q version %q runtime %q; want %q %q %q %q", w.name, f.Kind, f.Entry, f.Version, f.RuntimePreference, w.kind, w.entry, w.version, w.runtime)
		}
		if f.Dir != filepath.Join(tools, w.name) {
			t.Errorf("%s: Dir %q", w.name, f.Dir)
		}
	}

	broken := map[string]string{
		"empty":        "empty: discover: no tool.ts, tool.js or tool.go in " + filepath.Join(tools, "empty"),
		"go-no-mod":    "go-no-mod: discover: tool.go: tool.go needs a go.mod beside it in " + filepath.Join(tools, "go-no-mod") + " (run: go mod init <name>)",
		"both":         "both: discover: both tool.ts and tool.go in " + filepath.Join(tools, "both") + ": a folder holds one tool; keep one of them",
		"bad-json":     "bad-json: discover: package.json:3:17: not valid JSON: invalid character '.' after object key:value pair",
		"bad-runtime":  `bad-runtime: discover: package.json: "jean2"."runtime" is "deno": use "node" or "bun"`,
		"bad-deps":     `bad-deps: discover: package.json: "dependencies": the version of "is-number" must be a string, got a number`,
		"bad-version":  `bad-version: discover: VERSION: "latest" is not a semantic version: write one like 1.0.0`,
		"escape-main":  `escape-main: discover: package.json: "main" "../other/tool.ts" leaves the tool folder: name a file inside it`,
		"missing-main": "missing-main: discover: package.json: \"main\" names dist/tool.js, which is not a file in " + filepath.Join(tools, "missing-main") + " (and there is no tool.ts or tool.js)",
	}
	for name, msg := range broken {
		f := byName[name]
		var le *Error
		if !errors.As(f.Err, &le) {
			t.Errorf("%s: Err = %v; want *Error", name, f.Err)
			continue
		}
		if le.Stage != StageDiscover || le.Error() != msg {
			t.Errorf("%s:\n got %s\nwant %s", name, le.Error(), msg)
		}
	}

	// A folder that is not there is no error: a fresh machine has no tools.
	if fs, err := Discover(filepath.Join(tools, "nope")); err != nil || fs != nil {
		t.Errorf("Discover(missing) = %v, %v", fs, err)
	}
}

func TestIsToolFolderName(t *testing.T) {
	for name, want := range map[string]bool{
		"my-tool": true, "a.b": true, "x.staging": false, "x.previous": false, ".git": false, "": false, "staging": true,
	} {
		if got := IsToolFolderName(name); got != want {
			t.Errorf("IsToolFolderName(%q) = %v", name, got)
		}
	}
}

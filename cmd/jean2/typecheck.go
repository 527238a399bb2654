package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	jean2 "github.com/jean2/jean2"
	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/internal/fsutil"
	"github.com/jean2/jean2/loader"
	"github.com/jean2/jean2/sdkjs"
)

// typescriptVersion is the TypeScript compiler `tools validate --typecheck` installs: the
// last line of the JavaScript compiler (7 is a native port with other packaging).
const typescriptVersion = "5.9.3"

// writeEditorTypes makes the SDK's imports resolve in an editor for the folder, whoever
// made it: the SDK packages in .jean2/types and, when the folder has no tsconfig.json or
// jsconfig.json, one whose "paths" point at them. A person's own config is never edited;
// what to add to it is printed instead.
func writeEditorTypes(e env, layout host.Layout, dir string) error {
	f := loader.Inspect(dir)
	if f.Err != nil {
		return nil
	}
	if f.Kind == loader.KindGo {
		return writeGoWork(layout, dir)
	}
	if err := sdkjs.WriteEditorTypes(dir); err != nil {
		return err
	}
	if f.Package != nil {
		for name, spec := range f.Package.Dependencies {
			if sdkjs.IsHostPackage(name) && spec != sdkjs.EditorDependency() {
				fmt.Fprintf(e.stderr, "note: package.json lists %q: %q, which `npm install` cannot fetch (no registry has it; the jean2 host provides it): use %q\n", name, spec, sdkjs.EditorDependency())
			}
		}
	}
	config := "tsconfig.json"
	if strings.HasSuffix(f.Entry, ".js") || strings.HasSuffix(f.Entry, ".mjs") {
		config = "jsconfig.json"
	}
	for _, name := range []string{"tsconfig.json", "jsconfig.json"} {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if !bytes.Contains(raw, []byte(sdkjs.EditorTypesDir)) {
			paths, _ := json.Marshal(sdkjs.EditorPaths())
			fmt.Fprintf(e.stderr, "note: for editor types, add to compilerOptions in %s: \"paths\": %s\n", name, paths)
		}
		return nil
	}
	return fsutil.WriteFileAtomic(filepath.Join(dir, config), []byte(editorConfig(f.Entry)))
}

// tscLine is one diagnostic of `tsc --pretty false`: file(line,col): error TSnnnn: text.
var tscLine = regexp.MustCompile(`^(.+?)\((\d+),(\d+)\): (error|warning) (TS\d+): (.*)$`)

// typecheckFolder runs the TypeScript compiler on a tool folder and prints each error as
// FILE:LINE:COL (relative to the folder). It returns how many errors there were.
func typecheckFolder(ctx context.Context, e env, layout host.Layout, dir string) (int, error) {
	tsc, err := ensureTypeScript(ctx, e, layout)
	if err != nil {
		return 0, err
	}
	node, err := exec.LookPath("node")
	if p := e.getenv("JEAN2_NODE"); p != "" {
		node, err = p, nil
	}
	if err != nil {
		return 0, fmt.Errorf("--typecheck runs the TypeScript compiler on Node, which is not installed: %w", err)
	}
	args := []string{tsc, "--pretty", "false", "--noEmit"}
	if _, err := os.Stat(filepath.Join(dir, "tsconfig.json")); err == nil {
		args = append(args, "-p", filepath.Join(dir, "tsconfig.json"))
	} else if _, err := os.Stat(filepath.Join(dir, "jsconfig.json")); err == nil {
		args = append(args, "-p", filepath.Join(dir, "jsconfig.json"))
	} else {
		return 0, fmt.Errorf("%s has no tsconfig.json: run jean2 tools validate without --typecheck once to write one", dir)
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, node, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	n := 0
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		m := tscLine.FindStringSubmatch(line)
		if m == nil {
			if strings.TrimSpace(line) != "" {
				fmt.Fprintln(e.stdout, "  "+line) // a continuation of the message above
			}
			continue
		}
		file := m[1]
		if filepath.IsAbs(file) {
			if rel, err := filepath.Rel(dir, file); err == nil && !strings.HasPrefix(rel, "..") {
				file = rel
			}
		}
		if m[4] == "error" {
			n++
		}
		fmt.Fprintf(e.stdout, "%s:%s:%s: %s %s: %s\n", filepath.ToSlash(file), m[2], m[3], m[4], m[5], m[6])
	}
	var ee *exec.ExitError
	if runErr != nil && !errors.As(runErr, &ee) {
		return 0, fmt.Errorf("run tsc: %w", runErr)
	}
	if runErr != nil && n == 0 {
		return 1, fmt.Errorf("tsc failed: %s", strings.TrimSpace(out.String()))
	}
	if n == 0 {
		fmt.Fprintln(e.stdout, "typecheck: no errors")
	} else {
		fmt.Fprintf(e.stdout, "typecheck: %d error%s\n", n, plural(n))
	}
	return n, nil
}

// ensureTypeScript installs the TypeScript compiler from npm once into
// $JEAN2_HOME/cache/typescript/VERSION and returns its tsc script. Concurrent jean2
// processes wait for one install; an install is moved into place whole, so a failed one
// leaves nothing behind.
func ensureTypeScript(ctx context.Context, e env, layout host.Layout) (string, error) {
	root := filepath.Join(layout.Cache, "typescript")
	dest := filepath.Join(root, typescriptVersion)
	tsc := filepath.Join(dest, "node_modules", "typescript", "bin", "tsc")
	if _, err := os.Stat(tsc); err == nil {
		return tsc, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	unlock, err := fsutil.LockFile(ctx, filepath.Join(root, ".lock"), nil)
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(tsc); err == nil {
		return tsc, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("--typecheck installs TypeScript with npm, which is not installed: %w", err)
	}
	scratch, err := os.MkdirTemp(root, ".install-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(scratch)
	fmt.Fprintf(e.stderr, "installing typescript@%s into %s (once)\n", typescriptVersion, dest)
	cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, npm, "install", "--prefix", scratch, "--no-audit", "--no-fund", "--ignore-scripts",
		"--no-package-lock", "typescript@"+typescriptVersion)
	cmd.Dir = scratch
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("npm install typescript@%s: %v\n%s", typescriptVersion, err, strings.TrimSpace(out.String()))
	}
	if _, err := os.Stat(filepath.Join(scratch, "node_modules", "typescript", "bin", "tsc")); err != nil {
		return "", fmt.Errorf("npm install typescript@%s left no tsc: %v", typescriptVersion, err)
	}
	if err := os.Rename(scratch, dest); err != nil {
		return "", err
	}
	return tsc, nil
}

// goWorkMarker starts the go.work files jean2 writes; a go.work without it is the person's.
const goWorkMarker = "// Written by jean2"

// writeGoWork gives a Go tool folder a go.work that puts the SDK module jean2 carries
// (github.com/jean2/jean2, published nowhere) beside it, so that gopls and `go test` in the
// folder resolve it. The host's own build ignores it (GOWORK=off). A go.work jean2 did not
// write is left alone.
func writeGoWork(layout host.Layout, dir string) error {
	p := filepath.Join(dir, "go.work")
	if raw, err := os.ReadFile(p); err == nil && !bytes.HasPrefix(raw, []byte(goWorkMarker)) {
		return nil
	}
	sdk, err := jean2.WriteSDKModule(filepath.Join(layout.Cache, "gosdk"))
	if err != nil {
		return err
	}
	content := goWorkMarker + " so that gopls and go test find the SDK module the jean2 host\n" +
		"// carries; jean2 builds the tool without it. jean2 tools validate rewrites it.\n" +
		"go " + jean2.SDKGoVersion() + "\n\nuse .\n\nreplace github.com/jean2/jean2 => " + sdk + "\n"
	return fsutil.WriteFileAtomic(p, []byte(content))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

package loader

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const isNumberTool = `import isNumber from 'is-number';
import type { ToolDefinition } from '@jean2/sdk';
export const definition: ToolDefinition = { name: 'num', description: 'd', inputSchema: { type: 'object' } };
export async function execute(input: { v: unknown }) { return { success: true, result: isNumber(input.v) }; }
`

func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("installs packages from the npm registry")
	}
}

func TestInstallDependenciesWithNPM(t *testing.T) {
	skipShort(t)
	dir := filepath.Join(t.TempDir(), "num")
	writeFiles(t, dir, map[string]string{
		"tool.ts":      isNumberTool,
		"package.json": `{"name": "@jean2/tool-num", "type": "module", "scripts": {"preinstall": "touch SCRIPT_RAN"}, "dependencies": {"@jean2/sdk": "^0.9.0", "@jxsuite/ai": "^1.0.0", "is-number": "7.0.0"}}`,
	})
	l := newTestLoader(t)
	var progress progressLog
	b := l.mustLoad(t, dir, LoadOptions{Progress: progress.report})
	if !progress.has(StageInstall) || !progress.has(StageBundle) {
		t.Errorf("progress: %q", progress.stages)
	}
	if want := "install: installing 1 dependency (is-number) with npm"; progress.stages[0] != want {
		t.Errorf("first progress %q; want %q", progress.stages[0], want)
	}
	pkg, err := os.ReadFile(filepath.Join(dir, "node_modules", "is-number", "package.json"))
	if err != nil || !strings.Contains(string(pkg), `"version": "7.0.0"`) {
		t.Fatalf("is-number not installed: %v %s", err, pkg)
	}
	// The SDK was not fetched: what is in node_modules/@jean2 and @jxsuite is the host's.
	sdkPkg, err := os.ReadFile(filepath.Join(dir, "node_modules", "@jean2", "sdk", "package.json"))
	if err != nil || !strings.Contains(string(sdkPkg), "Provided by the jean2 host") {
		t.Errorf("node_modules/@jean2/sdk is not the host's: %v %s", err, sdkPkg)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@jxsuite", "ai", "tools.d.ts")); err != nil {
		t.Errorf("@jxsuite/ai types missing: %v", err)
	}
	for _, leftover := range []string{"SCRIPT_RAN", "package-lock.json"} {
		if _, err := os.Stat(filepath.Join(dir, leftover)); !os.IsNotExist(err) {
			t.Errorf("%s in the tool folder: the install must not touch it (%v)", leftover, err)
		}
	}
	if scratch, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), ".num.install-*")); len(scratch) != 0 {
		t.Errorf("scratch left behind: %v", scratch)
	}
	out, stderr, err := runNode(t, b.Path, "console.log(JSON.stringify([await mod.execute({ v: 5 }), await mod.execute({ v: 'x' })]));")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if want := `[{"success":true,"result":true},{"success":true,"result":false}]`; strings.TrimSpace(out) != want {
		t.Errorf("bundle ran as %s; want %s", out, want)
	}

	// Unchanged dependencies: no install, a cache hit.
	progress = progressLog{}
	again := l.mustLoad(t, dir, LoadOptions{Progress: progress.report})
	if progress.has(StageInstall) || !again.Cached {
		t.Errorf("unchanged folder: progress %q, cached %v", progress.stages, again.Cached)
	}
	// Editing the tool's code does not reinstall either.
	writeFiles(t, dir, map[string]string{"tool.ts": isNumberTool + "\nexport const extra = 1;\n"})
	progress = progressLog{}
	l.mustLoad(t, dir, LoadOptions{Progress: progress.report})
	if progress.has(StageInstall) || !progress.has(StageBundle) {
		t.Errorf("code change: progress %q", progress.stages)
	}

	// A changed dependency set reinstalls, and the new stamp changes the bundle hash.
	writeFiles(t, dir, map[string]string{
		"package.json": `{"type": "module", "dependencies": {"@jean2/sdk": "^0.9.0", "is-number": "7.0.0", "is-odd": "3.0.1"}}`,
	})
	progress = progressLog{}
	changed := l.mustLoad(t, dir, LoadOptions{Progress: progress.report})
	if !progress.has(StageInstall) || changed.Hash == again.Hash {
		t.Errorf("changed deps: progress %q, hash unchanged %v", progress.stages, changed.Hash == again.Hash)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "is-odd", "package.json")); err != nil {
		t.Errorf("is-odd not installed: %v", err)
	}
	// Dropping only an SDK package changes nothing the installer sees.
	writeFiles(t, dir, map[string]string{
		"package.json": `{"type": "module", "dependencies": {"is-number": "7.0.0", "is-odd": "3.0.1"}}`,
	})
	progress = progressLog{}
	l.mustLoad(t, dir, LoadOptions{Progress: progress.report})
	if progress.has(StageInstall) {
		t.Errorf("removing @jean2/sdk reinstalled: %q", progress.stages)
	}
	if old, _ := filepath.Glob(filepath.Join(dir, "node_modules.old*")); len(old) != 0 {
		t.Errorf("old node_modules left: %v", old)
	}
}

func TestInstallMissingPackageFails(t *testing.T) {
	skipShort(t)
	dir := filepath.Join(t.TempDir(), "broken-dep")
	writeFiles(t, dir, map[string]string{
		"tool.ts":      "export const definition = { name: 'x' };\n",
		"package.json": `{"dependencies": {"jean2-no-such-package-7f3a9c2e": "1.0.0"}}`,
	})
	l := newTestLoader(t)
	le := l.loadErr(t, dir)
	if le.Stage != StageInstall {
		t.Fatalf("stage %q: %v", le.Stage, le)
	}
	for _, want := range []string{"npm install failed", "E404", "jean2-no-such-package-7f3a9c2e"} {
		if !strings.Contains(le.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, le)
		}
	}
	if strings.Contains(le.Error(), "complete log of this run") {
		t.Errorf("error keeps npm's log pointer:\n%v", le)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); !os.IsNotExist(err) {
		t.Errorf("a failed install left node_modules (%v)", err)
	}
	if l.builds.Load() != 0 {
		t.Error("bundled after a failed install")
	}
}

func TestInstallDependenciesWithBun(t *testing.T) {
	skipShort(t)
	if bunBinary() == "" {
		t.Skip("bun is not installed (run scripts/setup)")
	}
	dir := filepath.Join(t.TempDir(), "bun-num")
	writeFiles(t, dir, map[string]string{
		"tool.ts":      isNumberTool,
		"package.json": `{"type": "module", "jean2": {"runtime": "bun"}, "dependencies": {"@jean2/sdk": "*", "is-number": "7.0.0"}}`,
	})
	l := newTestLoader(t)
	var progress progressLog
	b := l.mustLoad(t, dir, LoadOptions{Progress: progress.report})
	if want := "install: installing 1 dependency (is-number) with bun"; len(progress.stages) == 0 || progress.stages[0] != want {
		t.Errorf("progress %q; want %q first", progress.stages, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "is-number", "package.json")); err != nil {
		t.Fatalf("is-number not installed by bun: %v", err)
	}
	out, stderr, err := runNode(t, b.Path, "console.log(JSON.stringify(await mod.execute({ v: 1 })));")
	if err != nil || strings.TrimSpace(out) != `{"success":true,"result":true}` {
		t.Errorf("bundle ran as %q: %v\n%s", out, err, stderr)
	}
	// The same folder run on node uses npm: a different installer is a different set.
	progress = progressLog{}
	l.mustLoad(t, dir, LoadOptions{Runtime: RuntimeNode, Progress: progress.report})
	if !progress.has(StageInstall) || !strings.Contains(progress.stages[0], "with npm") {
		t.Errorf("switch to node: progress %q", progress.stages)
	}
}

func TestFilterDeps(t *testing.T) {
	pkg := &Package{
		Dependencies: map[string]string{
			"@jean2/sdk": "^0.9.0", "@jxsuite/ai": "1", "@jxsuite/other": "2", "@jean2/sdkx": "1",
			"lodash": "^4", "local": "file:../shared", "bare-rel": "./vendor/x",
		},
		OptionalDependencies: map[string]string{"@jxsuite/ai": "1", "fsevents": "*"},
	}
	d := filterDeps("/tools/t", pkg, installerNPM)
	wantDeps := map[string]string{"@jean2/sdkx": "1", "lodash": "^4", "local": "file:/tools/shared", "bare-rel": "file:/tools/t/vendor/x"}
	if !reflect.DeepEqual(d.deps, wantDeps) || !reflect.DeepEqual(d.optional, map[string]string{"fsevents": "*"}) {
		t.Errorf("filtered: %v %v", d.deps, d.optional)
	}
	dir := t.TempDir()
	s1, _ := d.stamp(dir)
	s2, _ := filterDeps("/tools/t", pkg, installerBun).stamp(dir)
	writeFiles(t, dir, map[string]string{"package-lock.json": "{}"})
	s3, _ := d.stamp(dir)
	if s1 == s2 || s1 == s3 {
		t.Error("installer or lockfile did not change the stamp")
	}
	if !filterDeps("/x", &Package{Dependencies: map[string]string{"@jean2/sdk": "1"}}, installerNPM).empty() {
		t.Error("an SDK-only folder needs an install")
	}
}

func TestInstallerMessage(t *testing.T) {
	out := "npm error code E404\nnpm error 404 Not Found - GET https://registry.npmjs.org/x - Not found\nnpm error A complete log of this run can be found in: /root/.npm/_logs/x-debug-0.log\n"
	if got, want := installerMessage(out), "npm error code E404\nnpm error 404 Not Found - GET https://registry.npmjs.org/x - Not found"; got != want {
		t.Errorf("got %q", got)
	}
	var tb tailBuffer
	for i := 0; i < 100; i++ {
		tb.Write([]byte(strings.Repeat("x", 1000) + "\n"))
	}
	tb.Write([]byte("last line"))
	if s := tb.String(); len(s) > tailLimit || !strings.HasSuffix(s, "last line") {
		t.Errorf("tail buffer kept %d bytes", len(s))
	}
}

// TestInstallDependenciesWithBunOnPath: with no Bun configured (no JEAN2_BUN) a Bun tool's
// dependencies are installed by the bun found on PATH, as jean2 doctor finds it.
func TestInstallDependenciesWithBunOnPath(t *testing.T) {
	skipShort(t)
	bun := bunBinary()
	if bun == "" {
		t.Skip("bun is not installed (run scripts/setup)")
	}
	t.Setenv("PATH", filepath.Dir(bun)+string(os.PathListSeparator)+os.Getenv("PATH"))
	dir := filepath.Join(t.TempDir(), "bun-path")
	writeFiles(t, dir, map[string]string{
		"tool.ts":      isNumberTool,
		"package.json": `{"type": "module", "dependencies": {"@jean2/sdk": "*", "is-number": "7.0.0"}}`,
	})
	l := newTestLoader(t)
	l.opts.Runtimes = Runtimes{}
	l.mustLoad(t, dir, LoadOptions{Runtime: RuntimeBun})
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "is-number", "package.json")); err != nil {
		t.Fatalf("is-number not installed by the bun on PATH: %v", err)
	}
}

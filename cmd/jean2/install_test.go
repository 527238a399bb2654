package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/jean2/jean2/install"
)

// runWith runs jean2 with extra environment variables.
func (c *cli) runWith(extra []string, args ...string) (string, string, int) {
	c.t.Helper()
	cmd := exec.Command(jean2Bin, args...)
	cmd.Env = append(c.env(), extra...)
	cmd.Dir = c.ws
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func greetFiles(version string, env ...string) map[string]string {
	return namedFiles("greet", version, env...)
}

// namedFiles is greetFiles under another tool name (two folders may not define one name).
func namedFiles(name, version string, env ...string) map[string]string {
	envDecl := ""
	if len(env) > 0 {
		quoted, _ := json.Marshal(env)
		envDecl = " env: " + string(quoted) + ","
	}
	return map[string]string{
		"package.json": fmt.Sprintf(`{"name": "@jean2/tool-%s", "version": %q, "type": "module"}`, name, version),
		"tool.ts": fmt.Sprintf(`export const definition = { name: %q, description: 'says hello',%s inputSchema: { type: 'object', properties: { who: { type: 'string' } } } };
export async function execute(input: { who?: string }) {
  return { success: true, result: { greeting: 'hello ' + (input.who ?? 'world'), version: %q } };
}
`, name, envDecl, version),
	}
}

func sortedNames(m map[string]string) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func makeTarGz(t *testing.T, prefix string, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, n := range sortedNames(files) {
		if err := tw.WriteHeader(&tar.Header{Name: prefix + n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write([]byte(files[n]))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	_ = gz.Close()
	return buf.Bytes()
}

func makeZip(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, n := range sortedNames(files) {
		w, err := zw.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(files[n]))
	}
	_ = zw.Close()
	return buf.Bytes()
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func writeFile(t *testing.T, p string, data []byte) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// greetVersion runs greet and returns the version that answered.
func (c *cli) greetVersion(tool string) string {
	c.t.Helper()
	out, stderr, code := c.run("", "tools", "run", tool, "--input", `{"who":"cli"}`)
	if code != 0 {
		c.t.Fatalf("run %s: exit %d %s %s", tool, code, out, stderr)
	}
	var res struct {
		Result struct{ Greeting, Version string } `json:"result"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Result.Greeting != "hello cli" {
		c.t.Fatalf("run %s: %s %v", tool, out, err)
	}
	return res.Result.Version
}

func (c *cli) toolFolders() []string {
	c.t.Helper()
	entries, err := os.ReadDir(filepath.Join(c.home, "tools"))
	if err != nil {
		c.t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestToolsInstallFolderArchiveAndURL(t *testing.T) {
	c := newCLI(t)
	src := t.TempDir()

	// A folder.
	folder := filepath.Join(src, "greet-src")
	for name, content := range greetFiles("1.0.0") {
		writeFile(t, filepath.Join(folder, name), []byte(content))
	}
	out, stderr, code := c.run("", "tools", "install", folder)
	if code != 0 || !strings.Contains(out, "Installed greet 1.0.0 from "+folder) {
		t.Fatalf("folder: exit %d\n%s\n%s", code, out, stderr)
	}
	// Not a terminal: plain lines, one per stage.
	for _, want := range []string{"greet: copying…", "greet: bundling…", "greet: loading…", "greet: swapping in…"} {
		if strings.Count(stderr, want+"\n") != 1 {
			t.Errorf("progress lacks %q once:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "\r") {
		t.Errorf("terminal control characters on a pipe: %q", stderr)
	}
	if v := c.greetVersion("greet"); v != "1.0.0" {
		t.Fatalf("serving %s", v)
	}

	// A .tar.gz with one top folder, replacing the folder install.
	tgz := writeFile(t, filepath.Join(src, "greet-1.1.0.tar.gz"), makeTarGz(t, "greet-1.1.0/", greetFiles("1.1.0")))
	out, stderr, code = c.run("", "tools", "install", tgz)
	if code != 0 || !strings.Contains(out, "Installed greet 1.1.0") || !strings.Contains(out, "(replaced 1.0.0)") || !strings.Contains(stderr, "nothing was verified") {
		t.Fatalf("tar.gz: exit %d\n%s\n%s", code, out, stderr)
	}
	if v := c.greetVersion("greet"); v != "1.1.0" {
		t.Fatalf("serving %s", v)
	}

	// A .zip, under another name.
	zipPath := writeFile(t, filepath.Join(src, "z.zip"), makeZip(t, namedFiles("greet-zip", "2.0.0")))
	out, stderr, code = c.run("", "tools", "install", zipPath, "--name", "greet-zip", "--json")
	var outcomes []struct {
		OK     bool
		Result struct{ Name, Version, SHA256 string }
	}
	if code != 0 || json.Unmarshal([]byte(out), &outcomes) != nil || len(outcomes) != 1 || !outcomes[0].OK || outcomes[0].Result.Name != "greet-zip" || outcomes[0].Result.Version != "2.0.0" {
		t.Fatalf("zip: exit %d\n%s\n%s", code, out, stderr)
	}

	// A URL on a local server, with its .sha256 beside it.
	archive := makeTarGz(t, "", greetFiles("3.0.0"))
	mux := http.NewServeMux()
	mux.HandleFunc("/greet.tar.gz", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(archive) })
	mux.HandleFunc("/greet.tar.gz.sha256", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s  greet.tar.gz\n", sha(archive))
	})
	mux.HandleFunc("/bad.tar.gz", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(archive) })
	mux.HandleFunc("/bad.tar.gz.sha256", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, strings.Repeat("f", 64)) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	out, stderr, code = c.run("", "tools", "install", srv.URL+"/greet.tar.gz")
	if code != 0 || !strings.Contains(out, "Installed greet 3.0.0") || !strings.Contains(stderr, "verified against "+srv.URL+"/greet.tar.gz.sha256") || !strings.Contains(stderr, "greet.tar.gz: downloading "+srv.URL) {
		t.Fatalf("url: exit %d\n%s\n%s", code, out, stderr)
	}
	if v := c.greetVersion("greet"); v != "3.0.0" {
		t.Fatalf("serving %s", v)
	}

	// A bad checksum fails with exit 1, names the stage and both digests, and keeps 3.0.0.
	out, stderr, code = c.run("", "tools", "install", srv.URL+"/bad.tar.gz", "--name", "greet")
	if code != 1 || !strings.Contains(stderr, "verify failed: sha256 mismatch") || !strings.Contains(stderr, sha(archive)) || !strings.Contains(stderr, "the installed 3.0.0 is untouched") {
		t.Fatalf("bad sum: exit %d\n%s\n%s", code, out, stderr)
	}
	if v := c.greetVersion("greet"); v != "3.0.0" {
		t.Fatalf("serving %s after a refused install", v)
	}
	// A syntax error fails at bundle, and the installed one keeps serving.
	broken := greetFiles("4.0.0")
	broken["tool.ts"] = "export const definition = {;\n"
	brokenTgz := writeFile(t, filepath.Join(src, "broken.tgz"), makeTarGz(t, "", broken))
	_, stderr, code = c.run("", "tools", "install", brokenTgz)
	if code != 1 || !strings.Contains(stderr, "install greet: bundle failed: tool.ts:1:28") {
		t.Fatalf("broken: exit %d\n%s", code, stderr)
	}
	if v := c.greetVersion("greet"); v != "3.0.0" {
		t.Fatalf("serving %s after a failed install", v)
	}
	if got := strings.Join(c.toolFolders(), ","); got != "greet,greet-zip" {
		t.Fatalf("tools folder holds %s", got)
	}

	// Usage errors exit 2.
	for _, args := range [][]string{
		{"tools", "install"},
		{"tools", "install", "--recommended", "--all"},
		{"tools", "install", "--all", "x"},
		{"tools", "install", "a", "b", "--name", "c"},
		{"tools", "remove"},
		{"tools", "outdated", "x"},
	} {
		if _, stderr, code := c.run("", args...); code != 2 || !strings.HasPrefix(stderr, "jean2: ") {
			t.Errorf("%v: exit %d %s", args, code, stderr)
		}
	}
}

func TestToolsInstallFromIndexUpdateOutdatedRemove(t *testing.T) {
	c := newCLI(t)
	const secret = "do-not-print-this-value"
	repo := t.TempDir()
	put := func(name, version string, recommended bool, tools map[string]string) install.IndexTool {
		data := makeTarGz(t, "", tools)
		writeFile(t, filepath.Join(repo, "archives", name, version+".tar.gz"), data)
		return install.IndexTool{Name: name, Description: "d", Version: version, Recommended: recommended, SHA256: sha(data)}
	}
	writeIndex := func(tools ...install.IndexTool) {
		data, _ := json.Marshal(map[string]any{"version": 3, "registry": map[string]string{"baseUrl": "archives"}, "tools": tools})
		writeFile(t, filepath.Join(repo, "index.json"), data)
	}
	greet := put("greet", "1.0.0", true, greetFiles("1.0.0", "GREET_TOKEN", "GREET_REGION"))
	greet.EnvVars = []install.EnvVar{{Name: "GREET_REGION", Required: true}, {Name: "GREET_TOKEN", Sensitive: true}}
	hello := put("hello", "0.1.0", false, namedFiles("hello", "0.1.0"))
	writeIndex(greet, hello)
	indexEnv := []string{"JEAN2_TOOL_REGISTRY_URL=" + filepath.Join(repo, "index.json"), "GREET_TOKEN=" + secret}

	out, stderr, code := c.runWith(indexEnv, "tools", "install", "--recommended")
	if code != 0 || !strings.Contains(out, "Installed greet 1.0.0 from greet") || strings.Contains(out, "hello") {
		t.Fatalf("--recommended: exit %d\n%s\n%s", code, out, stderr)
	}
	// Missing variables by name, required first; a set one is not listed; no value anywhere.
	if !strings.Contains(out, "greet needs environment variables that are not set: GREET_REGION (required)\n") || strings.Contains(out+stderr, secret) {
		t.Fatalf("env report:\n%s\n%s", out, stderr)
	}
	if !strings.Contains(stderr, "verified against index") {
		t.Errorf("no verification note:\n%s", stderr)
	}
	// A bare name from the index; the config file works as well as the variable.
	writeFile(t, filepath.Join(c.home, "config.json"), []byte(fmt.Sprintf(`{"toolRegistryUrl": %q}`, filepath.Join(repo, "index.json"))))
	if out, stderr, code := c.run("", "tools", "install", "hello"); code != 0 || !strings.Contains(out, "Installed hello 0.1.0 from hello") {
		t.Fatalf("by name: exit %d\n%s\n%s", code, out, stderr)
	}
	if _, stderr, code := c.run("", "tools", "install", "nope"); code != 1 || !strings.Contains(stderr, `no tool named "nope" in the tool index`) || !strings.Contains(stderr, "greet, hello") {
		t.Fatalf("unknown name: exit %d %s", code, stderr)
	}

	out, _, code = c.run("", "tools", "outdated")
	if code != 0 || !strings.Contains(out, "NAME") || !strings.Contains(out, "greet  1.0.0      1.0.0   up to date") {
		t.Fatalf("outdated table:\n%s", out)
	}

	// The index moves on.
	greet2 := put("greet", "1.2.0-rc.1", true, greetFiles("1.2.0-rc.1"))
	writeIndex(greet2, hello)
	out, _, code = c.run("", "tools", "outdated", "--json")
	var st []install.VersionStatus
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || len(st) != 2 ||
		st[0].Name != "greet" || st[0].Installed != "1.0.0" || st[0].Latest != "1.2.0-rc.1" || !st[0].Outdated ||
		st[1].Name != "hello" || st[1].Outdated {
		t.Fatalf("outdated --json: exit %d\n%s", code, out)
	}
	out, stderr, code = c.run("", "tools", "update")
	if code != 0 || !strings.Contains(out, "Updated greet 1.0.0 → 1.2.0-rc.1") || !strings.Contains(out, "hello 0.1.0: up to date") {
		t.Fatalf("update: exit %d\n%s\n%s", code, out, stderr)
	}
	if v := c.greetVersion("greet"); v != "1.2.0-rc.1" {
		t.Fatalf("serving %s", v)
	}

	// remove, and an unknown name lists what is installed.
	out, _, code = c.run("", "tools", "remove", "greet")
	if code != 0 || !strings.Contains(out, "Removed greet") {
		t.Fatalf("remove: exit %d %s", code, out)
	}
	_, stderr, code = c.run("", "tools", "remove", "greet")
	if code != 1 || !strings.Contains(stderr, `no tool "greet" is installed; installed tools are: hello`) {
		t.Fatalf("remove unknown: exit %d %s", code, stderr)
	}
	if got := strings.Join(c.toolFolders(), ","); got != "hello" {
		t.Fatalf("tools folder holds %s", got)
	}
	out, _, _ = c.run("", "tools", "list", "--json")
	if strings.Contains(out, `"name": "greet"`) || !strings.Contains(out, `"name": "hello"`) {
		t.Fatalf("list after remove: %s", out)
	}
}

func TestProgressPrinter(t *testing.T) {
	var tty, plain bytes.Buffer
	pt, pp := newProgressPrinter(&tty, true), newProgressPrinter(&plain, false)
	events := []install.Event{
		{Tool: "greet", Stage: install.StageDownload, Message: "downloading http://127.0.0.1/g.tgz", Done: 0, Total: 3 << 20},
		{Tool: "greet", Stage: install.StageDownload, Message: "downloading http://127.0.0.1/g.tgz", Done: 1 << 20, Total: 3 << 20},
		{Tool: "greet", Stage: install.StageDownload, Message: "downloading http://127.0.0.1/g.tgz", Done: 3 << 20, Total: 3 << 20},
		{Tool: "greet", Stage: install.StageVerify, Message: "sha256 abc verified against index", Note: true},
		{Tool: "greet", Stage: install.StageUnpack, Message: "unpacking"},
		{Tool: "greet", Stage: install.StageInstallDeps, Message: "installing 1 dependency (x) with npm"},
		{Tool: "greet", Stage: install.StageBundle, Message: "bundling tool.ts"},
		{Tool: "greet", Stage: install.StageLoad, Message: "loading"},
	}
	for _, ev := range events {
		pt.event(ev)
		pp.event(ev)
	}
	pt.clear()
	pp.clear()
	wantPlain := `greet: downloading http://127.0.0.1/g.tgz
greet: sha256 abc verified against index
greet: unpacking…
greet: installing dependencies…
greet: bundling…
greet: loading…
`
	if plain.String() != wantPlain {
		t.Errorf("plain:\n%s\nwant:\n%s", plain.String(), wantPlain)
	}
	wantTTY := "\r\033[Kgreet: downloading 0 B / 3.0 MiB" +
		"\r\033[Kgreet: downloading 1.0 MiB / 3.0 MiB" +
		"\r\033[Kgreet: downloading 3.0 MiB / 3.0 MiB" +
		"\r\033[Kgreet: sha256 abc verified against index\n" +
		"\r\033[Kgreet: unpacking…" +
		"\r\033[Kgreet: installing dependencies…" +
		"\r\033[Kgreet: bundling…" +
		"\r\033[Kgreet: loading…" +
		"\r\033[K"
	if tty.String() != wantTTY {
		t.Errorf("tty:\n%q\nwant:\n%q", tty.String(), wantTTY)
	}
}

// Installing a tool with a built-in's name (jean2's catalogue has shell, todoread,
// todowrite and webfetch) does not replace the working built-in: the install says so and
// how to choose, tools list shows the folder as shadowed, and turning the built-in off in
// config.json lets the folder's tool serve.
func TestToolsInstallBuiltinName(t *testing.T) {
	c := newCLI(t)
	folder := filepath.Join(t.TempDir(), "todoread")
	for name, content := range namedFiles("todoread", "1.0.0") {
		writeFile(t, filepath.Join(folder, name), []byte(content))
	}
	out, stderr, code := c.run("", "tools", "install", folder)
	if code != 0 || !strings.Contains(out, `jean2's built-in todoread keeps serving under that name; to use this one instead, add "todoread" to "disabledBuiltins"`) {
		t.Fatalf("install: exit %d\n%s\n%s", code, out, stderr)
	}
	list := func() map[string][]string {
		out, stderr, code := c.run("", "tools", "list", "--json")
		var entries []struct{ Name, Kind, Status, Error, Replaces string }
		if code != 0 || json.Unmarshal([]byte(out), &entries) != nil {
			t.Fatalf("tools list: exit %d\n%s\n%s", code, out, stderr)
		}
		got := map[string][]string{}
		for _, e := range entries {
			if e.Name == "todoread" {
				got[e.Kind] = append(got[e.Kind], e.Status+" "+e.Replaces+" "+e.Error)
			}
		}
		return got
	}
	got := list()
	if len(got["builtin"]) != 1 || !strings.HasPrefix(got["builtin"][0], "ok ") || len(got["js"]) != 1 ||
		!strings.HasPrefix(got["js"][0], "shadowed ") || !strings.Contains(got["js"][0], "which serves") {
		t.Fatalf("tools list after the install: %v", got)
	}
	writeFile(t, filepath.Join(c.home, "config.json"), []byte(`{"disabledBuiltins": ["todoread"]}`))
	got = list()
	if len(got["builtin"]) != 0 || len(got["js"]) != 1 || !strings.HasPrefix(got["js"][0], "ok builtin") {
		t.Fatalf("tools list with the built-in turned off: %v", got)
	}
}

package main

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jean2/jean2/install"
)

// Every tool of the repository's catalogue passes its own cases, in a real worker.
func TestCatalogueToolsPassTheirCases(t *testing.T) {
	dirs, err := filepath.Glob("../../catalogue/*/tool.ts")
	if err != nil || len(dirs) < 4 {
		t.Fatalf("catalogue tools: %v %v", dirs, err)
	}
	for _, toolTS := range dirs {
		name := filepath.Base(filepath.Dir(toolTS))
		t.Run(name, func(t *testing.T) {
			c := newCLI(t)
			dir := filepath.Join(c.home, "tools", name)
			copyDir(t, filepath.Dir(toolTS), dir)
			out, stderr, code := c.run("", "tools", "test", name)
			if code != 0 || !strings.Contains(out, "cases passed") {
				t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
			}
		})
	}
}

// The index built from the catalogue, served over HTTP, installs by name: the archive is
// checked against the index's sha256 and the tool runs. A tampered archive is refused and
// nothing is installed.
func TestCatalogueIndexInstallsOverHTTP(t *testing.T) {
	out := t.TempDir()
	idx, err := install.BuildIndex(install.BuildOptions{Catalogue: "../../catalogue", Out: out})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(out)))
	t.Cleanup(srv.Close)
	c := newCLI(t)
	env := []string{"JEAN2_TOOL_REGISTRY_URL=" + srv.URL + "/" + install.IndexFileName}

	stdout, stderr, code := c.runWith(env, "tools", "install", "--json", "json-format")
	var outcomes []installOutcome
	if code != 0 || json.Unmarshal([]byte(stdout), &outcomes) != nil || len(outcomes) != 1 || !outcomes[0].OK {
		t.Fatalf("install: exit %d\n%s\n%s", code, stdout, stderr)
	}
	want, _ := idx.Tool("json-format")
	if r := outcomes[0].Result; r.Verified != "index" || r.SHA256 != want.SHA256 || r.Version != "1.0.0" {
		t.Fatalf("result %+v; want 1.0.0 verified against the index's sha256 %s", r, want.SHA256)
	}
	stdout, stderr, code = c.run("", "tools", "run", "json-format", "--input", `{"text":"{\"b\":1,\"a\":[true]}","sortKeys":true,"indent":0}`)
	if code != 0 || !strings.Contains(stdout, `"formatted": "{\"a\":[true],\"b\":1}"`) {
		t.Fatalf("run the installed tool: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if stdout, _, _ := c.runWith(env, "tools", "search", "regular", "expression"); !strings.Contains(stdout, "regex-test") || !strings.Contains(stdout, "1 shown, 0 installed") {
		t.Fatalf("search: %s", stdout)
	}

	// A changed archive: the copy of text-stats's where regex-test's should be.
	tampered, err := os.ReadFile(filepath.Join(out, "text-stats-1.0.0.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "regex-test-1.0.0.tar.gz"), tampered, 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = c.runWith(env, "tools", "install", "regex-test")
	if code == 0 || !strings.Contains(stderr, "sha256 mismatch") || !strings.Contains(stderr, "refused") {
		t.Fatalf("tampered archive: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(c.home, "tools", "regex-test")); !os.IsNotExist(err) {
		t.Fatalf("the refused tool's folder is there: %v", err)
	}

	// --all takes the rest of the index: each verified against it, the tampered one refused.
	stdout, stderr, code = c.runWith(env, "tools", "install", "--all", "--json")
	outcomes = nil
	if code == 0 || json.Unmarshal([]byte(stdout), &outcomes) != nil || len(outcomes) != len(idx.Tools)-1 {
		t.Fatalf("--all: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, o := range outcomes {
		tampered := o.Source == "regex-test"
		if o.OK == tampered || (!tampered && o.Result.Verified != "index") || (tampered && o.Stage != install.StageVerify) {
			t.Errorf("--all %s: %+v", o.Source, o)
		}
	}
}

// With no index configured, the index is the latest release's tools.json; the test sees the
// request at an HTTPS proxy of its own (which refuses it) rather than reaching GitHub.
// "toolRegistryUrl": "" turns it off.
func TestDefaultIndexIsTheReleasesIndex(t *testing.T) {
	var mu sync.Mutex
	var connects []string
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			req, err := http.ReadRequest(bufio.NewReader(conn))
			if err == nil {
				mu.Lock()
				connects = append(connects, req.Method+" "+req.Host)
				mu.Unlock()
			}
			_, _ = conn.Write([]byte("HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n"))
			conn.Close()
		}
	}()
	c := newCLI(t)
	env := []string{"HTTPS_PROXY=http://" + ln.Addr().String(), "NO_PROXY="}
	_, stderr, code := c.runWith(env, "tools", "search", "json")
	mu.Lock()
	seen := strings.Join(connects, ", ")
	mu.Unlock()
	if code == 0 || !strings.Contains(stderr, install.DefaultIndexURL) || seen != "CONNECT github.com:443" {
		t.Fatalf("exit %d, proxy saw %q\n%s", code, seen, stderr)
	}
	writeFile(t, filepath.Join(c.home, "config.json"), []byte(`{"toolRegistryUrl": ""}`))
	_, stderr, code = c.runWith(env, "tools", "search", "json")
	if code == 0 || !strings.Contains(stderr, "the tool index is turned off") {
		t.Fatalf("turned off: exit %d\n%s", code, stderr)
	}
}

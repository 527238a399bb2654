package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// conformanceSuite returns the command that runs the official MCP conformance suite
// (scripts/setup installs it into .deps/conformance; it needs Node 22, so Bun runs it).
func conformanceSuite(t *testing.T) []string {
	t.Helper()
	deps, _ := filepath.Abs("../../.deps")
	cli := filepath.Join(deps, "conformance", "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	bun := os.Getenv("JEAN2_BUN")
	if bun == "" {
		bun = filepath.Join(deps, "node_modules", ".bin", "bun")
	}
	for _, f := range []string{cli, bun} {
		if _, err := os.Stat(f); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is missing: scripts/setup installs it", f)
			}
			t.Skipf("%s is missing: run scripts/setup", f)
		}
	}
	return []string{bun, cli}
}

// conformanceCheck is one check of a scenario's checks.json.
type conformanceCheck struct {
	ID           string          `json:"id"`
	Status       string          `json:"status"`
	Description  string          `json:"description"`
	ErrorMessage string          `json:"errorMessage"`
	Details      json.RawMessage `json:"details"`
}

// runConformance runs one scenario (args: "server --url U" or "client --command C") and
// returns its checks, read from the file the suite writes.
func runConformance(t *testing.T, suite []string, scenario string, env []string, args ...string) []conformanceCheck {
	t.Helper()
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, suite[0], append(append(suite[1:], args...), "--scenario", scenario, "-o", out)...)
	cmd.Env = append(os.Environ(), env...)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	_ = cmd.Run()      // a failing scenario exits non-zero; its checks say why
	var files []string // auth/… scenarios write into a folder of their own
	_ = filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "checks.json" {
			files = append(files, p)
		}
		return nil
	})
	if len(files) != 1 {
		t.Errorf("scenario %s wrote no checks.json (%v):\n%s", scenario, files, log.String())
		return nil
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Error(err)
		return nil
	}
	var checks []conformanceCheck
	if err := json.Unmarshal(data, &checks); err != nil {
		t.Errorf("scenario %s: checks.json: %v", scenario, err)
		return nil
	}
	if len(checks) == 0 {
		t.Errorf("scenario %s made no checks:\n%s", scenario, log.String())
		return nil
	}
	return checks
}

// requireClean fails unless every check of a scenario passed or only informed: no failure
// and no warning.
func requireClean(t *testing.T, scenario string, checks []conformanceCheck) {
	t.Helper()
	if checks == nil {
		return // runConformance said why
	}
	passed := 0
	for _, c := range checks {
		switch c.Status {
		case "SUCCESS":
			passed++
		case "INFO":
		default:
			t.Errorf("%s: %s %s: %s (%s) %s", scenario, c.Status, c.ID, c.Description, c.ErrorMessage, c.Details)
		}
	}
	if passed == 0 {
		t.Errorf("%s: no check succeeded: %+v", scenario, checks)
	}
}

// The official conformance suite's server scenarios against jean2 serve's /mcp, with the API
// token the server requires (a proxy on localhost adds it, as an MCP client configured with
// the header would). Every scenario that applies to a tools server must pass with no
// warning; those of resources, prompts, completion and of image, audio and embedded content
// (jean2's tools return JSON results) do not apply.
func TestMCPConformanceServer(t *testing.T) {
	suite := conformanceSuite(t)
	c := newCLI(t)
	tools, _ := filepath.Abs("testdata/conformance/tools")
	entries, err := os.ReadDir(tools)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		copyDir(t, filepath.Join(tools, e.Name()), filepath.Join(c.home, "tools", e.Name()))
	}
	s := startServe(t, c, nil)
	target, _ := url.Parse(s.base)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1 // SSE events pass at once
	direct := proxy.Director
	proxy.Director = func(r *http.Request) {
		direct(r)
		r.Header.Set("Authorization", "Bearer "+s.token)
	}
	front := httptest.NewServer(proxy)
	defer front.Close()
	// The suite's DNS rebinding scenario needs a localhost URL.
	mcpURL := strings.Replace(front.URL, "127.0.0.1", "localhost", 1) + "/mcp"

	// Without the token, /mcp refuses: the proxy is what lets the suite in.
	resp, err := http.Post(s.base+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/mcp without the token: %d, want 401", resp.StatusCode)
	}

	for _, scenario := range []string{
		"server-initialize", "ping", "logging-set-level", "tools-list",
		"tools-call-simple-text", "tools-call-error", "tools-call-with-logging", "tools-call-with-progress",
		"tools-call-sampling", "tools-call-elicitation", "json-schema-2020-12",
		"server-sse-polling", "server-sse-multiple-streams", "dns-rebinding-protection",
	} {
		checks := runConformance(t, suite, scenario, nil, "server", "--url", mcpURL)
		requireClean(t, scenario, checks)
	}
	if t.Failed() {
		fmt.Fprintln(os.Stderr, s.logs.String())
	}
}

// The official conformance suite's client scenarios against jean2's MCP client, through
// jean2 mcp probe (testdata/conformance/probe.sh passes a scenario's pre-registered client
// and lets curl play the browser that follows the authorization server's redirect to the
// loopback listener). Every scenario must pass with no warning; the tokens it signed in for
// are kept 0600 under $JEAN2_HOME/mcp-oauth.
func TestMCPConformanceClient(t *testing.T) {
	suite := conformanceSuite(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed (it plays the browser of the sign-in)")
	}
	c := newCLI(t)
	probe, _ := filepath.Abs("testdata/conformance/probe.sh")
	env := append(c.env(), "JEAN2_BIN="+jean2Bin)
	// sse-retry measures how long the client waits before reconnecting: on its own, so the
	// others' work does not delay it.
	requireClean(t, "sse-retry", runConformance(t, suite, "sse-retry", env, "client", "--command", probe))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for _, scenario := range []string{
		"initialize", "tools_call", "elicitation-sep1034-client-defaults",
		"auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3",
		"auth/basic-cimd", "auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported",
		"auth/scope-omitted-when-undefined", "auth/scope-step-up", "auth/scope-retry-limit",
		"auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post", "auth/token-endpoint-auth-none",
		"auth/pre-registration",
	} {
		// Four at a time: each mostly waits on its own servers and on jean2.
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			checks := runConformance(t, suite, scenario, env, "client", "--command", probe)
			requireClean(t, scenario, checks)
		}()
	}
	wg.Wait()
	dir := filepath.Join(c.home, "mcp-oauth")
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) == 0 {
		t.Fatalf("no token kept in %s", dir)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("%s: %v %v, want a 0700 folder", dir, fi.Mode(), err)
	}
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want 0600", f, fi.Mode(), err)
		}
		data, _ := os.ReadFile(f)
		if !strings.Contains(string(data), `"access_token"`) {
			t.Errorf("%s holds no token: %s", f, data)
		}
	}
}

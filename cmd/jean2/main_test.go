package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/jean2/jean2/internal/pgtest"
)

// jean2Bin is the jean2 binary built once for the tests that run it as a user would.
var jean2Bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "jean2-cli-test")
	if err != nil {
		panic(err)
	}
	jean2Bin = filepath.Join(dir, "jean2")
	build := exec.Command("go", "build", "-o", jean2Bin, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build jean2:", err)
		os.Exit(1)
	}
	// A throwaway PostgreSQL for the tests of jean2 serve on Postgres (internal/pgtest).
	stopPostgres := pgtest.Setup()
	code := m.Run()
	stopPostgres()
	os.RemoveAll(dir)
	os.Exit(code)
}

type cli struct {
	t    *testing.T
	home string
	ws   string
	// extraEnv is added to every run's environment (JEAN2_SANDBOX=off).
	extraEnv []string
}

func newCLI(t *testing.T) *cli {
	root := t.TempDir()
	c := &cli{t: t, home: filepath.Join(root, "home"), ws: filepath.Join(root, "ws")}
	if err := os.MkdirAll(filepath.Join(c.home, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(c.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *cli) env() []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "JEAN2_HOME=" + c.home, "JEAN2_LOG=error"}
	// The machine's certificate settings, as a person's shell has them: npm (TypeScript's
	// install for --typecheck) reaches the registry through whatever the machine trusts.
	for _, k := range []string{"NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return append(env, c.extraEnv...)
}

// run runs jean2 with args and stdin; it returns stdout, stderr and the exit code.
func (c *cli) run(stdin string, args ...string) (string, string, int) {
	c.t.Helper()
	cmd := exec.Command(jean2Bin, args...)
	cmd.Env = c.env()
	cmd.Dir = c.ws
	cmd.Stdin = strings.NewReader(stdin)
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

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if out, err := exec.Command("cp", "-r", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
}

func TestToolsRunExitCodes(t *testing.T) {
	c := newCLI(t)
	copyDir(t, "../../host/testdata/word-count", filepath.Join(c.home, "tools", "word-count"))
	_ = os.WriteFile(filepath.Join(c.ws, "a.txt"), []byte("one two three\n"), 0o644)

	out, stderr, code := c.run("", "tools", "run", "word-count", "--input", `{"path":"a.txt"}`)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, stderr)
	}
	var res struct {
		Success bool           `json:"success"`
		Result  map[string]int `json:"result"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || !res.Success || res.Result["words"] != 3 {
		t.Fatalf("result %s: %v", out, err)
	}
	// @FILE input and --workspace.
	argsFile := filepath.Join(t.TempDir(), "args.json")
	_ = os.WriteFile(argsFile, []byte(`{"path":"a.txt"}`), 0o644)
	if _, stderr, code := c.run("", "tools", "run", "word-count", "--input", "@"+argsFile, "--workspace", c.ws); code != 0 {
		t.Fatalf("@FILE: exit %d %s", code, stderr)
	}
	// A failed result exits 1 and still prints the result.
	out, _, code = c.run("", "tools", "run", "word-count", "--input", `{"path":"missing.txt"}`)
	if code != 1 || !strings.Contains(out, `"success": false`) || !strings.Contains(out, "ENOENT") {
		t.Fatalf("failed result: exit %d %s", code, out)
	}
	// Usage errors exit 2 and say what was wrong.
	for _, args := range [][]string{
		{"tools", "run"},
		{"tools", "run", "word-count", "--input", "{not json"},
		{"tools", "run", "word-count", "--nope"},
		{"tools", "frobnicate"},
		{"bogus"},
	} {
		_, stderr, code := c.run("", args...)
		if code != 2 || !strings.HasPrefix(stderr, "jean2: ") {
			t.Errorf("%v: exit %d stderr %q", args, code, stderr)
		}
	}
	// An ask with no terminal and no answers file fails the call with a clear error.
	outside := filepath.Join(t.TempDir(), "o.txt")
	_ = os.WriteFile(outside, []byte("x y"), 0o644)
	out, _, code = c.run("", "tools", "run", "word-count", "--input", fmt.Sprintf(`{"path":%q}`, outside))
	if code != 1 || !strings.Contains(out, "--answers FILE") {
		t.Fatalf("no one to ask: exit %d %s", code, out)
	}
	// --answers answers it.
	answers := filepath.Join(t.TempDir(), "answers.json")
	_ = os.WriteFile(answers, []byte(`[true]`), 0o644)
	out, _, code = c.run("", "tools", "run", "word-count", "--input", fmt.Sprintf(`{"path":%q}`, outside), "--answers", answers)
	if code != 0 || !strings.Contains(out, `"words": 2`) {
		t.Fatalf("--answers: exit %d %s", code, out)
	}
}

func TestToolsListJSONAndErrors(t *testing.T) {
	c := newCLI(t)
	copyDir(t, "../../host/testdata/word-count", filepath.Join(c.home, "tools", "word-count"))
	broken := filepath.Join(c.home, "tools", "broken")
	_ = os.MkdirAll(broken, 0o755)
	_ = os.WriteFile(filepath.Join(broken, "tool.ts"), []byte("export const definition = {;\n"), 0o644)

	out, stderr, code := c.run("", "tools", "list", "--json")
	if code != 0 {
		t.Fatalf("exit %d %s", code, stderr)
	}
	var entries []struct{ Name, Version, Runtime, Status, Error string }
	if err := json.Unmarshal([]byte(out), &entries); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	entries = withoutBuiltins(t, entries)
	if len(entries) != 2 || entries[0].Name != "broken" || entries[0].Status != "error" || !strings.Contains(entries[0].Error, "tool.ts:1:28") ||
		entries[1].Name != "word-count" || entries[1].Status != "ok" || entries[1].Version != "1.0.0" || entries[1].Runtime != "node" {
		t.Fatalf("entries %+v", entries)
	}
	out, _, code = c.run("", "tools", "list")
	if code != 0 || !strings.Contains(out, "NAME") || !regexp.MustCompile(`word-count +1\.0\.0`).MatchString(out) || !strings.Contains(out, "error") {
		t.Fatalf("table: %s", out)
	}
}

func TestToolsNewAndValidate(t *testing.T) {
	for _, lang := range []string{"ts", "js", "go"} {
		t.Run(lang, func(t *testing.T) {
			c := newCLI(t)
			out, stderr, code := c.run("", "tools", "new", "head-"+lang, "--lang", lang)
			if code != 0 || !strings.Contains(out, "Created") {
				t.Fatalf("new: exit %d %s %s", code, out, stderr)
			}
			dir := filepath.Join(c.home, "tools", "head-"+lang)
			if lang != "go" {
				if _, err := os.Stat(filepath.Join(dir, ".jean2", "types", "@jean2", "sdk", "index.d.ts")); err != nil {
					t.Fatalf("types not wired for editors: %v", err)
				}
			}
			out, _, code = c.run("", "tools", "validate", dir)
			if code != 0 || !strings.HasPrefix(out, "ok: head-"+lang+" ") {
				t.Fatalf("validate: exit %d %s", code, out)
			}
			_ = os.WriteFile(filepath.Join(c.ws, "f.txt"), []byte("l1\nl2\nl3\n"), 0o644)
			out, stderr, code = c.run("", "tools", "run", "head-"+lang, "--input", `{"path":"f.txt","lines":2}`)
			if code != 0 || !strings.Contains(out, `"head": "l1\nl2"`) {
				t.Fatalf("run scaffold: exit %d %s %s", code, out, stderr)
			}
			if _, _, code := c.run("", "tools", "new", "head-"+lang); code == 0 {
				t.Fatal("new over an existing folder must fail")
			}
			// The scaffold comes with a test that passes.
			if out, stderr, code := c.run("", "tools", "test", "head-"+lang); code != 0 || !strings.Contains(out, "all 2 cases passed") {
				t.Fatalf("tools test on the scaffold: exit %d %s %s", code, out, stderr)
			}
		})
	}
	c := newCLI(t)
	bad := filepath.Join(t.TempDir(), "bad")
	_ = os.MkdirAll(bad, 0o755)
	_ = os.WriteFile(filepath.Join(bad, "tool.js"), []byte("export const definition = { name: 'bad', description: 'x', inputSchema: { type: 'object' } };\n"), 0o644)
	out, _, code := c.run("", "tools", "validate", bad)
	if code != 1 || !strings.Contains(out, "execute") {
		t.Fatalf("validate bad: exit %d %s", code, out)
	}
	if _, stderr, code := c.run("", "tools", "new", "Bad Name"); code != 2 || !strings.Contains(stderr, "tool name") {
		t.Fatalf("bad name: %d %s", code, stderr)
	}
}

// On a terminal, asks are answered by typing.
func TestToolsRunAnswersAsksOnTerminal(t *testing.T) {
	c := newCLI(t)
	dir := filepath.Join(c.home, "tools", "asker")
	_ = os.MkdirAll(dir, 0o755)
	_ = os.WriteFile(filepath.Join(dir, "tool.ts"), []byte(`export const definition = { name: 'asker', description: 'asks', inputSchema: { type: 'object' } };
export async function execute(_: unknown, ctx: any) {
  const env = await ctx.ask({ target: 'human', type: 'single_select', question: 'Which environment?', options: [{ label: 'Production', value: 'prod' }, { label: 'Staging', value: 'staging' }] });
  const branch = await ctx.ask({ target: 'human', type: 'text', question: 'Branch name?', placeholder: 'main' });
  const sure = await ctx.ask({ target: 'human', type: 'confirm', question: 'Deploy now?', defaultValue: false });
  return { success: true, result: { env, branch, sure } };
}
`), 0o644)
	cmd := exec.Command(jean2Bin, "tools", "run", "asker", "--input", "{}")
	cmd.Env = c.env()
	cmd.Dir = c.ws
	ptmx, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	screen := &syncBuffer{}
	go func() { _, _ = io.Copy(screen, ptmx) }()
	waitFor := func(s string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(screen.String(), s) {
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %q; screen:\n%s", s, screen.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("Which environment?")
	_, _ = ptmx.Write([]byte("2\r"))
	waitFor("Branch name?")
	_, _ = ptmx.Write([]byte("feature/x\r"))
	waitFor("Deploy now?")
	_, _ = ptmx.Write([]byte("y\r"))
	waitFor(`"sure": true`)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v\n%s", err, screen.String())
	}
	for _, want := range []string{`"env": "staging"`, `"branch": "feature/x"`} {
		if !strings.Contains(screen.String(), want) {
			t.Errorf("missing %s in:\n%s", want, screen.String())
		}
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

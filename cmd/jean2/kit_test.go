package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Every subcommand's --help (and -h) prints that subcommand's own usage on stdout and
// exits 0, doing nothing else.
func TestSubcommandHelp(t *testing.T) {
	home := t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"tools", "list"}, "jean2 tools list [--json]"},
		{[]string{"tools", "ls"}, "jean2 tools list [--json]"},
		{[]string{"tools", "run"}, "jean2 tools run NAME --input"},
		{[]string{"tools", "new"}, "jean2 tools new NAME"},
		{[]string{"tools", "validate"}, "--typecheck"},
		{[]string{"tools", "test"}, "jean2 tools test [NAME|DIR]"},
		{[]string{"tools", "install"}, "jean2 tools install SOURCE"},
		{[]string{"tools", "remove"}, "jean2 tools remove NAME"},
		{[]string{"tools", "rm"}, "jean2 tools remove NAME"},
		{[]string{"tools", "update"}, "jean2 tools update [NAME...]"},
		{[]string{"tools", "outdated"}, "jean2 tools outdated [--json]"},
		{[]string{"tools", "approve"}, "jean2 tools approve NAME"},
		{[]string{"tools"}, "jean2 tools SUBCOMMAND --help"},
		{[]string{"mcp"}, "jean2 mcp [--workspace DIR]"},
		{[]string{"mcp", "trust"}, "jean2 mcp trust"},
		{[]string{"serve"}, "jean2 serve [--host"},
		{[]string{"signin"}, "jean2 signin"},
		{[]string{"chat"}, "jean2 chat [--workspace DIR]"},
		{[]string{"doctor"}, "jean2 doctor [--json]"},
		{[]string{"version"}, "jean2 version"},
		{nil, "jean2 hosts tools for LLM agents"},
	}
	for _, c := range cases {
		for _, flag := range []string{"--help", "-h"} {
			args := append(append([]string(nil), c.args...), flag)
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				var out, errb bytes.Buffer
				e := env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(k string) string {
					if k == "JEAN2_HOME" {
						return home
					}
					return ""
				}}
				err := run(context.Background(), e, args)
				if code := exitCode(err, &errb); code != 0 {
					t.Fatalf("exit %d, stderr %s", code, errb.String())
				}
				if !strings.Contains(out.String(), c.want) {
					t.Fatalf("stdout lacks %q:\n%s", c.want, out.String())
				}
				if errb.Len() != 0 {
					t.Fatalf("stderr: %s", errb.String())
				}
			})
		}
	}
}

// The README's command table lists every command the top usage names.
func TestReadmeListsEveryCommand(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, usage, _ := strings.Cut(topUsage, "Usage:")
	for _, line := range strings.Split(usage, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "jean2 ") {
			continue
		}
		f := strings.Fields(line)
		cmd := f[0] + " " + f[1]
		if (f[1] == "tools" || f[1] == "mcp") && len(f) > 2 && strings.ToLower(f[2]) == f[2] && !strings.HasPrefix(f[2], "-") && !strings.HasPrefix(f[2], "[") {
			cmd += " " + f[2]
		}
		if !bytes.Contains(readme, []byte("| `"+cmd)) {
			t.Errorf("README.md's command table has no row for %q", cmd)
		}
	}
}

// A declared variable jean2 withholds is listed as withheld, not as unset.
func TestToolsListSaysWithheld(t *testing.T) {
	c, env := keyEchoCLI(t)
	out, stderr, code := c.runEnv(env, "tools", "list")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var row string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "key-echo") {
			row = l
		}
	}
	if !strings.Contains(row, "withheld: MY_PROVIDER_KEY") || strings.Contains(row, "env not set: MY_PROVIDER_KEY") {
		t.Fatalf("row: %s", row)
	}
}

// `tools run NAME` and `tools validate NAME` say nothing about other broken tools.
func TestRunAndValidateIgnoreOtherBrokenTools(t *testing.T) {
	c := newCLI(t)
	copyDir(t, "../../host/testdata/word-count", filepath.Join(c.home, "tools", "word-count"))
	broken := filepath.Join(c.home, "tools", "broken-at-load")
	if err := os.MkdirAll(broken, 0o755); err != nil {
		t.Fatal(err)
	}
	// It bundles, then throws when a worker imports it: the host warns when it starts one.
	if err := os.WriteFile(filepath.Join(broken, "tool.ts"), []byte("throw new Error('boom at load');\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(c.ws, "a.txt"), []byte("one two\n"), 0o644)
	env := append(c.env()[:3], "JEAN2_LOG=info")
	// The host does warn about it when it is the tool asked for.
	if _, stderr, _ := c.runEnv(env, "tools", "list"); !strings.Contains(stderr, "broken-at-load") {
		t.Fatalf("tools list did not warn about the broken tool (the test would prove nothing): %s", stderr)
	}
	for _, args := range [][]string{
		{"tools", "run", "word-count", "--input", `{"path":"a.txt"}`},
		{"tools", "validate", "word-count"},
		{"tools", "validate", filepath.Join(c.home, "tools", "word-count")},
	} {
		out, stderr, code := c.runEnv(env, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s %s", args, code, out, stderr)
		}
		if strings.Contains(stderr, "broken-at-load") {
			t.Errorf("%v warned about an unrelated tool:\n%s", args, stderr)
		}
	}
}

// Several jean2 processes loading one freshly changed tool at once: each must run it. Before
// the per-folder lock and the bundle that is never replaced, about one run in twenty failed
// with "EACCES … cache/bundles/….mjs" (the worker's sandbox named the first process's file,
// which the second had replaced). The race is one of timing, so this catches it only
// sometimes; loader's TestPublishBundleNeverReplaces and TestLoadWaitsForAnotherProcess pin
// the two causes down deterministically.
func TestConcurrentRunsOfAFreshTool(t *testing.T) {
	c := newCLI(t)
	dir := filepath.Join(c.home, "tools", "word-count")
	copyDir(t, "../../host/testdata/word-count", dir)
	_ = os.WriteFile(filepath.Join(c.ws, "a.txt"), []byte("one two\n"), 0o644)
	for round := range 10 {
		f, err := os.OpenFile(filepath.Join(dir, "tool.ts"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(f, "// round %d\n", round)
		f.Close()
		var wg sync.WaitGroup
		errs := make(chan string, 3)
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out, stderr, code := c.run("", "tools", "run", "word-count", "--input", `{"path":"a.txt"}`)
				if code != 0 || strings.Contains(stderr, "EACCES") {
					errs <- fmt.Sprintf("round %d: exit %d: %s %s", round, code, out, stderr)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Error(e)
		}
	}
}

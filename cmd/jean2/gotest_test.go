package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A Go tool runs its case files from `go test` through the SDK's tool.RunTestCases, in a
// real worker under the real policy; the go.work jean2 writes lets `go test` find the SDK.
// A failing case fails the Go test and names the case and the difference.
func TestGoToolRunsItsCasesFromGoTest(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go toolchain")
	}
	c := newCLI(t)
	if out, stderr, code := c.run("", "tools", "new", "gocases", "--lang", "go"); code != 0 {
		t.Fatalf("new: %d %s %s", code, out, stderr)
	}
	dir := filepath.Join(c.home, "tools", "gocases")
	if data, err := os.ReadFile(filepath.Join(dir, "go.work")); err != nil || !strings.Contains(string(data), "replace github.com/jean2/jean2 => "+filepath.Join(c.home, "cache", "gosdk")) {
		t.Fatalf("go.work: %s %v", data, err)
	}
	test := "package main\n\nimport (\n\t\"testing\"\n\n\t\"github.com/jean2/jean2/tool\"\n)\n\nfunc TestCases(t *testing.T) { tool.RunTestCases(t, \".\") }\n"
	if err := os.WriteFile(filepath.Join(dir, "tool_test.go"), []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	goTest := func() (string, error) {
		cmd := exec.Command(goBin, "test", "-count=1", "-v", ".")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "JEAN2_BIN="+jean2Bin, "JEAN2_HOME="+c.home, "JEAN2_LOG=error")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := goTest()
	if err != nil || !strings.Contains(out, "ok   shows the first lines (tests/head.json#1)") {
		t.Fatalf("go test: %v\n%s", err, out)
	}
	cases, _ := os.ReadFile(filepath.Join(dir, "tests", "head.json"))
	_ = os.WriteFile(filepath.Join(dir, "tests", "head.json"), []byte(strings.Replace(string(cases), `"head": "one\ntwo"`, `"head": "uno\ndos"`, 1)), 0o644)
	out, err = goTest()
	if err == nil || !strings.Contains(out, "FAIL shows the first lines (tests/head.json#1)") || !strings.Contains(out, `result.head: got "one\ntwo", want "uno\ndos"`) {
		t.Fatalf("go test with a failing case: %v\n%s", err, out)
	}
	// The host still builds the folder as before (go.work and the test file aside).
	if out, stderr, code := c.run("", "tools", "validate", "gocases"); code != 0 {
		t.Fatalf("validate: %d %s %s", code, out, stderr)
	}
}

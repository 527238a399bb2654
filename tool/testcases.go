package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
)

// TestingT is the part of *testing.T that RunTestCases uses (the SDK does not import
// package testing into every tool binary).
type TestingT interface {
	Helper()
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// RunTestCases runs the test cases kept in the tool folder dir (tests/*.json, the format of
// `jean2 tools test`) from a Go test: each case calls the tool in a real worker under the
// host's real policy, exactly as `jean2 tools test dir` does, and each failed case is a test
// error naming the case and every difference. args are passed on (--run PATTERN,
// --update). The jean2 command is $JEAN2_BIN, else jean2 on PATH.
//
//	func TestCases(t *testing.T) { tool.RunTestCases(t, ".") }
func RunTestCases(t TestingT, dir string, args ...string) {
	t.Helper()
	bin := os.Getenv("JEAN2_BIN")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("jean2"); err != nil {
			t.Fatalf("RunTestCases needs the jean2 command: put it on PATH or set JEAN2_BIN (%v)", err)
			return
		}
	}
	cmd := exec.Command(bin, append([]string{"tools", "test", dir, "--json"}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run %s tools test: %v", bin, err)
		return
	}
	var cases []struct {
		Case     string   `json:"case"`
		File     string   `json:"file"`
		Passed   bool     `json:"passed"`
		Problems []string `json:"problems"`
	}
	if jerr := json.Unmarshal(out.Bytes(), &cases); jerr != nil {
		// Not a report: the cases could not be read or the tool folder not found.
		t.Fatalf("jean2 tools test %s: %s", dir, strings.TrimSpace(errb.String()+"\n"+out.String()))
		return
	}
	for _, c := range cases {
		if c.Passed {
			t.Logf("ok   %s (%s)", c.Case, c.File)
			continue
		}
		t.Errorf("FAIL %s (%s):\n\t%s", c.Case, c.File, strings.Join(c.Problems, "\n\t"))
	}
}

package host_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/jean2/jean2/sandbox"
)

// TestMain lets the test binary act as the sandbox launcher, as the jean2 binary does: a
// host under test starts its workers through os.Args[0] __sandbox-exec.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.ExecArg {
		os.Exit(sandbox.Main(os.Args[2:], os.Stderr))
	}
	code := m.Run()
	if code != 0 {
		fmt.Fprintln(os.Stderr, "host tests failed")
	}
	os.Exit(code)
}

package e2e_test

import (
	"os"
	"testing"

	"github.com/jean2/jean2/sandbox"
)

// TestMain lets the test binary be the sandbox launcher (as the jean2 binary is), for the
// terminal's shell (TestTerminalTab).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.ExecArg {
		os.Exit(sandbox.Main(os.Args[2:], os.Stderr))
	}
	os.Exit(m.Run())
}

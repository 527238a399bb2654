package main

import (
	"os"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/sandbox"
)

// runLauncher answers the hidden subcommand `jean2 __sandbox-exec --spec JSON -- PROGRAM
// ARGS…`: the host starts every tool worker through it, so that the worker runs under
// Landlock and its limits (docs/security.md). It returns only when it could not become
// PROGRAM. It runs before anything else in main: it is on the path of every worker start.
func runLauncher(args []string) int {
	return sandbox.Main(args, os.Stderr)
}

// sandboxOptions is how the jean2 command confines workers: JEAN2_SANDBOX (auto unless set:
// Landlock where the kernel has it, else Node's permission model), with this very binary as
// the launcher.
func sandboxOptions(e env) (host.SandboxOptions, error) {
	mode, err := sandbox.ParseMode(e.getenv("JEAN2_SANDBOX"))
	if err != nil {
		return host.SandboxOptions{}, usagef("JEAN2_SANDBOX: %v", err)
	}
	opts := host.SandboxOptions{Mode: mode, TempMounter: e.tempMounter}
	if exe, err := os.Executable(); err == nil {
		opts.Launcher = exe
	}
	return opts, nil
}

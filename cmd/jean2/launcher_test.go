package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/jean2/jean2/sandbox"
)

// The launcher refuses a malformed spec with exit 126 and says why.
func TestLauncherSubcommand(t *testing.T) {
	c := newCLI(t)
	_, stderr, code := c.run("", "__sandbox-exec", "--spec", "{nope", "--", "/bin/true")
	if code != 126 || !strings.Contains(stderr, "jean2 sandbox: sandbox spec is not valid JSON") {
		t.Fatalf("exit %d %s", code, stderr)
	}
	out, _, code := c.run("", "__sandbox-exec", "--spec", `{"dataMB":256}`, "--", "/bin/echo", "through the launcher")
	if code != 0 || out != "through the launcher\n" {
		t.Fatalf("exit %d %q", code, out)
	}
	if out, _, _ := c.run("", "help"); strings.Contains(out, "__sandbox-exec") {
		t.Fatal("the hidden subcommand shows in the usage")
	}
}

// BenchmarkWorkerLaunch is what the jean2 binary as launcher adds to starting a Node worker's
// runtime: node started directly, and through `jean2 __sandbox-exec` with a worker's full
// Landlock rule set and limits.
//
//	go test ./cmd/jean2 -run XXX -bench WorkerLaunch -benchtime 30x
func BenchmarkWorkerLaunch(b *testing.B) {
	node, err := exec.LookPath("node")
	if err != nil {
		b.Skip("no node")
	}
	dir := b.TempDir()
	plan := sandbox.Plan{Program: node, RuntimeRoot: sandbox.RuntimeRoot(node, ""), ReadOnly: []string{dir}, ReadWrite: []string{dir}}
	spec := sandbox.Spec{Landlock: true, Rules: plan.Rules(), DataMB: 512}
	if abi, _ := sandbox.LandlockABI(); abi < 1 {
		spec = sandbox.Spec{DataMB: 512}
	}
	path, args, err := sandbox.Command(jean2Bin, spec, node, []string{"-e", "0"})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		path string
		args []string
	}{{"direct", node, []string{"-e", "0"}}, {"launcher", path, args}, {"launcher-only", jean2Bin, []string{sandbox.ExecArg, "--spec", "{}", "--", "/bin/true"}}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				cmd := exec.Command(c.path, c.args...)
				cmd.Env = []string{"PATH=/usr/bin:/bin"}
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
		})
	}
}

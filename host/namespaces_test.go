package host_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/jean2/jean2/sandbox"
)

// A tool with childProcess approved could make namespaces: `unshare -r` gives a process
// every capability inside a new user namespace (the kernel's code for namespaced mounts,
// netfilter and the rest becomes reachable), and from there a network or mount namespace.
// The launcher's seccomp filter refuses unshare, clone with a CLONE_NEW* flag and setns to
// every confined worker and what it starts.
//
// Before: `unshare -r id` printed uid=0(root), `unshare -Un true` and `unshare -Um true`
// succeeded.
func TestSandboxNoNewNamespaces(t *testing.T) {
	if _, err := os.Stat("/usr/bin/unshare"); err != nil {
		t.Skip("no /usr/bin/unshare here")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node")
	}
	for _, mode := range []sandbox.Mode{sandbox.ModeLandlock, sandbox.ModeNode} {
		t.Run(string(mode), func(t *testing.T) {
			sf := newSandboxFixture(t, mode, "{ childProcess: true }")
			if _, err := sf.h.ApprovePermissions("hostile"); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"-r", "id"}, {"-U", "true"}, {"-Un", "true"}, {"-Um", "true"}, {"-n", "true"}, {"-m", "true"}, {"-Up", "-f", "true"}, {"-U", "--fork", "true"}} {
				r, out := sf.try(t, map[string]any{"op": "spawn", "path": "/usr/bin/unshare", "args": args})
				if !out.Result.Success {
					t.Fatalf("unshare %v: the call failed: %s", args, out.Result.Error)
				}
				t.Logf("unshare %v: ok=%v %s %s", args, r.OK, r.Value, strings.TrimSpace(r.Stderr))
				if r.OK || !strings.Contains(r.Stderr, "unshare failed: Operation not permitted") {
					t.Errorf("unshare %v: got %+v %s, want unshare itself refused (EPERM)", args, r, r.Value)
				}
			}
			// Child processes as such still start: a shell, node, a pipeline.
			for _, c := range []struct {
				path string
				args []string
				want string
			}{
				{"/bin/sh", []string{"-c", "echo hi | tr a-z A-Z"}, "HI"},
				{node, []string{"-e", "require('child_process').execFileSync('/bin/true'); console.log('node ok')"}, "node ok"},
			} {
				r, out := sf.try(t, map[string]any{"op": "spawn", "path": c.path, "args": c.args})
				if !out.Result.Success || !r.OK || !strings.Contains(string(r.Value), c.want) {
					t.Errorf("%s %v: %+v %s", c.path, c.args, r, out.Result.Error)
				}
			}
			sf.unaffected(t)
		})
	}
}

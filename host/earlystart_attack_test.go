package host_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/sandbox"
)

// TestSandboxAttackEarlyStartBeforeApproval: workers are started the moment a tool folder
// appears, before its definition is known (earlystart.go), one of them with the places of
// the scope served last. A new tool that declares a permission (here a host), whose
// top-level code writes in the workspace when imported, must not run there before a
// person approved it: not when it appears, not when it is listed, not when it is called
// unapproved; once approved, its first call does (the control).
func TestSandboxAttackEarlyStartBeforeApproval(t *testing.T) {
	sf := newSandboxFixture(t, sandbox.ModeLandlock, "")
	if out := sf.call("canary", `{}`); !out.Result.Success {
		t.Fatalf("canary: %s", out.Result.Error)
	}
	sf.watchingDebounced(time.Second)
	marker := filepath.Join(sf.ws, "imported.txt")
	sf.addTool("eager", map[string]string{"package.json": pkgJSON,
		"tool.js": importWriterTool("eager", marker, `, permissions: { network: ['example.com'] }`)})
	sf.eventually("eager to be listed", func() bool {
		for _, x := range sf.h.Tools() {
			if x.Name == "eager" && x.Definition != nil {
				return true
			}
		}
		return false
	})
	out := sf.call("eager", `{}`)
	if out.Result.Success || !strings.Contains(out.Result.Error, "approve") {
		t.Fatalf("an unapproved call: %+v", out.Result)
	}
	time.Sleep(time.Second) // anything started early has had its chance
	if data, err := os.ReadFile(marker); err == nil {
		t.Fatalf("the unapproved tool's top-level code wrote in the workspace: %q", data)
	}
	if _, err := sf.h.ApprovePermissions("eager"); err != nil {
		t.Fatal(err)
	}
	if out := sf.call("eager", `{}`); !out.Result.Success {
		t.Fatalf("the approved call: %s", out.Result.Error)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the approved tool's first call did not load it with the workspace: %v", err)
	}
	if e := sf.entry("eager"); e.Status != host.StatusOK {
		t.Fatalf("eager: %+v", e)
	}
	sf.unaffected(t)
}

package host

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jean2/jean2/sandbox"
)

// Whatever the loader asks, the installer is granted no read beyond the tool's folder:
// a local dependency at / (file:/) is a refusal, not a grant on the whole disk.
func TestInstallSpecGrantsNothingBeyondTheFolder(t *testing.T) {
	root := t.TempDir()
	h := &Host{home: filepath.Join(root, "home"), sb: &hostSandbox{status: sandbox.Status{LandlockABI: 1}, limits: Limits{MaxTasks: 10}}}
	folder := filepath.Join(root, "tools", "t")
	cmd := exec.Command("/bin/true")
	if _, err := h.installSpec(cmd, []string{folder, "/"}, nil, nil); err == nil || !strings.Contains(err.Error(), "outside the tool folder") {
		t.Fatalf("a read of / was not refused: %v", err)
	}
	spec, err := h.installSpec(cmd, []string{folder, filepath.Join(folder, "vendor", "x.tgz")}, []string{filepath.Join(root, "scratch")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !spec.Landlock || spec.DataMB != InstallMemoryMB || spec.NProcExtra != 10 {
		t.Errorf("spec %+v", spec)
	}
	for _, r := range spec.Rules {
		if r.Path == "/" || r.Path == root {
			t.Errorf("rule %+v grants beyond the folder", r)
		}
	}
}

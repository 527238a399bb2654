//go:build linux && (amd64 || arm64)

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// nsProbeArg makes the test binary (started through the launcher) try to make namespaces
// by clone and clone3 and print what each got.
const nsProbeArg = "__ns-probe"

// helperMain runs a probe and exits when the test binary was started as one (this one, or
// sockets_test.go's).
func helperMain() {
	if len(os.Args) < 2 {
		return
	}
	switch os.Args[1] {
	case nsProbeArg:
		nsProbe()
	case socketProbeArg:
		socketProbe()
	default:
		return
	}
	os.Exit(0)
}

func nsProbe() {
	try := func(name string, flags uintptr) {
		pid, err := syscall.ForkExec("/bin/true", []string{"true"}, &syscall.ProcAttr{Sys: &syscall.SysProcAttr{Cloneflags: flags}})
		if err == nil {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, 0, nil)
			fmt.Printf("%s=ok\n", name)
			return
		}
		var errno syscall.Errno
		errors.As(err, &errno)
		fmt.Printf("%s=%s\n", name, unix.ErrnoName(errno))
	}
	try("plain", 0)
	try("clone-newuser", unix.CLONE_NEWUSER)
	try("clone-newuser-newnet", unix.CLONE_NEWUSER|unix.CLONE_NEWNET)
	// CLONE_NEWTIME makes Go use clone3.
	try("clone3-newuser", unix.CLONE_NEWUSER|unix.CLONE_NEWTIME)
}

// A program the worker starts cannot make namespaces by clone (EPERM) or clone3 (ENOSYS,
// whose flags seccomp cannot see), whatever else the spec says; a plain child still starts.
//
// Before the filter: clone-newuser, clone-newuser-newnet and clone3-newuser were ok.
func TestLauncherRefusesNamespaces(t *testing.T) {
	specs := []Spec{{}}
	if abi, _ := LandlockABI(); abi >= 1 {
		exe, _ := os.Executable()
		specs = append(specs, Spec{Landlock: true, Rules: Plan{Program: exe, ChildProcess: true, ReadOnly: []string{"/bin/true"}}.Rules()})
	}
	for i, spec := range specs {
		out, stderr, code := launch(t, spec, os.Args[0], nsProbeArg)
		if code != 0 {
			t.Fatalf("spec %d: exit %d %s", i, code, stderr)
		}
		got := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			k, v, _ := strings.Cut(l, "=")
			got[k] = v
		}
		want := map[string]string{"plain": "ok", "clone-newuser": "EPERM", "clone-newuser-newnet": "EPERM", "clone3-newuser": "ENOSYS"}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("spec %d (landlock %v): %s: %q, want %s (all: %v)", i, spec.Landlock, k, got[k], v, got)
			}
		}
	}
}

//go:build linux

package builtin_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// socketsScript tries, from a program a shell command runs, the socket families the
// launcher's allow-list judges, and prints name=ok or name=ERRNO for each.
const socketsScript = `import errno, socket
def attempt(name, f):
    try:
        f()
        print(name + "=ok")
    except OSError as e:
        print(name + "=" + errno.errorcode.get(e.errno, str(e.errno)))
def vsock():
    s = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
    s.bind((socket.VMADDR_CID_ANY, socket.VMADDR_PORT_ANY))
    s.listen(1)
attempt("vsock", vsock)
attempt("packet", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, 0))
attempt("netlink-audit", lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 9))
attempt("netlink-uevent", lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 15))
attempt("netlink-route", lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0))
attempt("inet", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
attempt("inet6", lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM))
attempt("socketpair", socket.socketpair)
`

// parseAttempts reads name=result lines.
func parseAttempts(out string) map[string]string {
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			got[k] = v
		}
	}
	return got
}

// TestShellAttackVsockListen: a command makes a vsock socket, binds a port and listens.
// vsock is in no network namespace: on Firecracker (this project's test VM) or WSL2 the
// hypervisor's side reaches that port, and the command the host's services. Now every
// socket family but INET, INET6, NETLINK_ROUTE and (socketpair of) UNIX fails with
// EAFNOSUPPORT; the command still makes the sockets the network needs.
//
// Before: vsock=ok, netlink-audit=ok, netlink-uevent=ok, packet=EPERM (no CAP_NET_RAW).
func TestShellAttackVsockListen(t *testing.T) {
	// The system's python: the fixture's commands have PATH=/usr/bin:/bin, and a pyenv
	// shim under $HOME is not theirs to run.
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skipf("no %s to make the sockets with", python)
	}
	if fd, err := unix.Socket(unix.AF_VSOCK, unix.SOCK_STREAM, 0); err != nil {
		t.Skipf("this kernel makes no vsock socket even unconfined (no vsock transport): %v", err)
	} else {
		unix.Close(fd)
	}
	f := newShellFixture(t, nil)
	if err := os.WriteFile(filepath.Join(f.ws, "sockets.py"), []byte(socketsScript), 0o644); err != nil {
		t.Fatal(err)
	}
	out, res := f.sh(python + " sockets.py")
	if !out.Result.Success || res.ExitCode != 0 {
		t.Fatalf("the command: %+v %+v", out.Result, res)
	}
	got := parseAttempts(res.Stdout)
	want := map[string]string{
		"vsock": "EAFNOSUPPORT", "packet": "EAFNOSUPPORT", "netlink-audit": "EAFNOSUPPORT", "netlink-uevent": "EAFNOSUPPORT",
		"netlink-route": "ok", "inet": "ok", "inet6": "ok", "socketpair": "ok",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %s (all: %v)", k, got[k], v, got)
		}
	}
}

//go:build linux

package host_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/jean2/jean2/sandbox"
	"golang.org/x/sys/unix"
)

// needVsock skips where the kernel makes no vsock socket even unconfined: there the attack
// has nothing to reach.
func needVsock(t *testing.T) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_VSOCK, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Skipf("this kernel makes no vsock socket even unconfined (no vsock transport): %v", err)
	}
	unix.Close(fd)
}

// socketsPython tries the socket families the launcher's allow-list judges and prints
// name=ok or name=ERRNO for each (as builtin's TestShellAttackVsockListen does).
const socketsPython = `import errno, socket
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
attempt("netlink-route", lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0))
attempt("inet", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
attempt("inet6", lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM))
attempt("socketpair", socket.socketpair)
`

// TestSandboxAttackVsockListenNode: a Node tool that may start processes runs a program
// that makes a vsock socket, binds and listens (Node itself has no vsock API; what it starts
// inherits its filters). vsock is in no network namespace: on Firecracker or WSL2 the
// hypervisor's side reaches it. Now it fails with EAFNOSUPPORT, and so do packet and audit
// netlink sockets; the Node worker still lists its interfaces (NETLINK_ROUTE).
//
// Before: vsock=ok, netlink-audit=ok, packet=EPERM (no CAP_NET_RAW).
func TestSandboxAttackVsockListenNode(t *testing.T) {
	needVsock(t)
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skipf("no %s to make the sockets with", python)
	}
	nf := newNetFixture(t, sandbox.ModeLandlock)
	r := nf.try(t, "netdeny", map[string]any{"op": "spawn", "path": python, "args": []string{"-c", socketsPython}})
	var out string
	if err := json.Unmarshal(r.Value, &out); !r.OK || err != nil {
		t.Fatalf("python from the Node worker: %+v %v", r, err)
	}
	want := map[string]string{"vsock": "EAFNOSUPPORT", "packet": "EAFNOSUPPORT", "netlink-audit": "EAFNOSUPPORT", "netlink-route": "ok", "inet": "ok", "inet6": "ok", "socketpair": "ok"}
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(l, "=")
		got[k] = v
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %s (all: %v)", k, got[k], v, got)
		}
	}
	r = nf.try(t, "netdeny", map[string]any{"op": "interfaces"})
	if !r.OK || !strings.Contains(string(r.Value), `"lo"`) {
		t.Errorf("os.networkInterfaces() in the Node worker: %+v", r)
	}
}

// TestSandboxSocketFamiliesGo: a Go tool makes the sockets with raw system calls. vsock
// (with bind and listen), packet, and netlink other than NETLINK_ROUTE fail with
// EAFNOSUPPORT; net.Interfaces (NETLINK_ROUTE) and INET/INET6 work, and an HTTP request goes
// through the egress proxy (which answers for an undeclared host).
//
// Before: vsock listened, audit and uevent netlink sockets opened, packet EPERM.
func TestSandboxSocketFamiliesGo(t *testing.T) {
	needVsock(t)
	sf := newRootToolFixture(t)
	for _, c := range []struct {
		args map[string]any
		want string // "" when it must work, else the refusal
	}{
		{map[string]any{"op": "vsock"}, "address family not supported"},
		{map[string]any{"op": "socket", "domain": unix.AF_PACKET, "type": unix.SOCK_DGRAM}, "address family not supported"},
		{map[string]any{"op": "socket", "domain": unix.AF_NETLINK, "type": unix.SOCK_RAW, "proto": unix.NETLINK_AUDIT}, "address family not supported"},
		{map[string]any{"op": "socket", "domain": unix.AF_NETLINK, "type": unix.SOCK_DGRAM, "proto": unix.NETLINK_KOBJECT_UEVENT}, "address family not supported"},
		{map[string]any{"op": "socket", "domain": unix.AF_ALG, "type": unix.SOCK_SEQPACKET}, "address family not supported"},
		{map[string]any{"op": "socket", "domain": unix.AF_NETLINK, "type": unix.SOCK_RAW, "proto": unix.NETLINK_ROUTE}, ""},
		{map[string]any{"op": "socket", "domain": unix.AF_INET, "type": unix.SOCK_STREAM}, ""},
		{map[string]any{"op": "socket", "domain": unix.AF_INET6, "type": unix.SOCK_DGRAM}, ""},
		{map[string]any{"op": "interfaces"}, ""},
	} {
		r, out := sf.rootTry(t, c.args)
		if !out.Result.Success {
			t.Fatalf("%v: the call failed: %s", c.args, out.Result.Error)
		}
		if c.want == "" && r.Error != "" {
			t.Errorf("%v: refused (%s), want it to work", c.args, r.Error)
		}
		if c.want != "" && !strings.Contains(r.Error, c.want) {
			t.Errorf("%v: got %q %q, want %s", c.args, r.Value, r.Error, c.want)
		}
	}
	// Through the proxy: it answers for the host the tool did not declare.
	r, out := sf.rootTry(t, map[string]any{"op": "fetch", "path": "http://undeclared.example/"})
	if !out.Result.Success || !strings.HasPrefix(r.Value, "403 ") || !strings.Contains(r.Value, "does not declare") {
		t.Errorf("an HTTP request through the proxy: %+v %s", r, out.Result.Error)
	}
	sf.unaffected(t, "go-root")
}

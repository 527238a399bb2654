//go:build linux && (amd64 || arm64)

package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// socketProbeArg makes the test binary (started through the launcher) try every socket
// family the allow-list judges and print what each got.
const socketProbeArg = "__socket-probe"

// errnoName is "ok" for nil, else the errno's name (EAFNOSUPPORT, EACCES…).
func errnoName(err error) string {
	if err == nil {
		return "ok"
	}
	var errno unix.Errno
	if errors.As(err, &errno) {
		return unix.ErrnoName(errno)
	}
	return err.Error()
}

// openSocket makes a socket and closes it again: the making is what is judged.
func openSocket(domain, typ, proto int) error {
	fd, err := unix.Socket(domain, typ|unix.SOCK_CLOEXEC, proto)
	if err == nil {
		unix.Close(fd)
	}
	return err
}

// listenVsock is the attack: a vsock socket bound to a port of this machine's vsock
// address and listening, which the hypervisor's side (Firecracker's, WSL2's) may reach
// whatever the network namespace.
func listenVsock() error {
	fd, err := unix.Socket(unix.AF_VSOCK, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrVM{CID: unix.VMADDR_CID_ANY, Port: unix.VMADDR_PORT_ANY}); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	if err := unix.Listen(fd, 1); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	return nil
}

func socketPair(domain int) error {
	fds, err := unix.Socketpair(domain, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
	}
	return err
}

func ioURingSetup() error {
	var params [120]byte // struct io_uring_params
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
	if errno != 0 {
		return errno
	}
	unix.Close(int(fd))
	return nil
}

// socketProbe prints name=result for every attempt, one a line.
func socketProbe() {
	attempts := []struct {
		name string
		try  func() error
	}{
		{"inet", func() error { return openSocket(unix.AF_INET, unix.SOCK_STREAM, 0) }},
		{"inet-udp", func() error { return openSocket(unix.AF_INET, unix.SOCK_DGRAM, 0) }},
		{"inet6", func() error { return openSocket(unix.AF_INET6, unix.SOCK_STREAM, 0) }},
		{"netlink-route", func() error { return openSocket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE) }},
		{"interfaces", func() error { _, err := net.Interfaces(); return err }}, // Go's net.Interfaces: NETLINK_ROUTE
		{"unix", func() error { return openSocket(unix.AF_UNIX, unix.SOCK_STREAM, 0) }},
		{"socketpair-unix", func() error { return socketPair(unix.AF_UNIX) }},
		{"vsock", listenVsock},
		{"packet", func() error { return openSocket(unix.AF_PACKET, unix.SOCK_DGRAM, 0) }},
		{"netlink-uevent", func() error { return openSocket(unix.AF_NETLINK, unix.SOCK_DGRAM, unix.NETLINK_KOBJECT_UEVENT) }},
		{"netlink-audit", func() error { return openSocket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_AUDIT) }},
		{"netlink-sockdiag", func() error { return openSocket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_SOCK_DIAG) }},
		{"alg", func() error { return openSocket(unix.AF_ALG, unix.SOCK_SEQPACKET, 0) }},
		{"key", func() error { return openSocket(unix.AF_KEY, unix.SOCK_RAW, 2) }}, // PF_KEY_V2
		{"xdp", func() error { return openSocket(unix.AF_XDP, unix.SOCK_RAW, 0) }},
		{"bluetooth", func() error { return openSocket(unix.AF_BLUETOOTH, unix.SOCK_STREAM, 0) }},
		{"socketpair-inet", func() error { return socketPair(unix.AF_INET) }},
		{"io_uring", ioURingSetup},
	}
	for _, a := range attempts {
		fmt.Printf("%s=%s\n", a.name, errnoName(a.try()))
	}
}

// probeSockets runs the probe through the launcher with spec and returns what each attempt
// got.
func probeSockets(t *testing.T, spec Spec) map[string]string {
	t.Helper()
	out, stderr, code := launch(t, spec, os.Args[0], socketProbeArg)
	if code != 0 {
		t.Fatalf("the probe: exit %d %s", code, stderr)
	}
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(l, "=")
		got[k] = v
	}
	return got
}

// Every launch holds its program to an allow-list of socket families: INET and INET6 (the
// proxy, and what runtimes need), NETLINK_ROUTE (getifaddrs, net.Interfaces), UNIX unless
// the network is isolated, socketpair of UNIX only. Every other family answers EAFNOSUPPORT,
// which programs take for "not built in" and fall back from.
//
// Before (a deny-list of AF_UNIX, installed only with the network isolated), on this
// Firecracker VM: vsock=ok, netlink-uevent=ok, netlink-audit=ok, netlink-sockdiag=ok,
// io_uring=ok, packet=EPERM and xdp=EPERM (refused only for want of CAP_NET_RAW),
// socketpair-inet=ENOTSUP; in a namespace the same but unix=EACCES and io_uring=ENOSYS. (alg,
// key and bluetooth were EAFNOSUPPORT already: not built into that kernel.)
func TestLauncherSocketAllowList(t *testing.T) {
	refused := map[string]string{
		"packet": "EAFNOSUPPORT", "netlink-uevent": "EAFNOSUPPORT", "netlink-audit": "EAFNOSUPPORT",
		"netlink-sockdiag": "EAFNOSUPPORT", "alg": "EAFNOSUPPORT", "key": "EAFNOSUPPORT", "xdp": "EAFNOSUPPORT",
		"bluetooth": "EAFNOSUPPORT", "socketpair-inet": "EAFNOSUPPORT", "io_uring": "ENOSYS",
	}
	allowed := []string{"inet", "inet-udp", "inet6", "netlink-route", "interfaces", "socketpair-unix"}
	specs := map[string]Spec{"plain": {}}
	if abi, _ := LandlockABI(); abi >= 1 {
		exe, _ := os.Executable()
		specs["landlock"] = Spec{Landlock: true, Rules: Plan{Program: exe}.Rules(), NoFork: CanDenyProcesses()}
	}
	if NetNSAvailable() == nil {
		ns, err := NewNetNS(0)
		if err != nil {
			t.Fatal(err)
		}
		defer ns.Close()
		specs["netns"] = Spec{NetNS: ns.Path()}
	}
	for name, spec := range specs {
		got := probeSockets(t, spec)
		want := map[string]string{"unix": "ok"}
		if spec.NetNS != "" {
			want["unix"] = "EACCES" // isolated: pathname sockets lead out of the namespace
		}
		for _, k := range allowed {
			want[k] = "ok"
		}
		for k, v := range refused {
			want[k] = v
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s: %q, want %s", name, k, got[k], v)
			}
		}
		if t.Failed() {
			t.Logf("%s: all: %v", name, got)
		}
	}
}

// The attack: a confined program makes a vsock socket, binds a port and listens. vsock is
// not part of any network namespace; on Firecracker or WSL2 the hypervisor's side reaches
// it (and the program the host's services). Now socket(AF_VSOCK) answers EAFNOSUPPORT in
// every launch, a namespace or not.
//
// Before: vsock=ok in every spec (plain, landlock, netns).
func TestLauncherRefusesVsock(t *testing.T) {
	if err := listenVsock(); err != nil {
		t.Skipf("this kernel makes no vsock socket even unconfined (no vsock transport): %v", err)
	}
	specs := map[string]Spec{"plain": {}}
	if NetNSAvailable() == nil {
		ns, err := NewNetNS(0)
		if err != nil {
			t.Fatal(err)
		}
		defer ns.Close()
		specs["netns"] = Spec{NetNS: ns.Path()}
	}
	for name, spec := range specs {
		if got := probeSockets(t, spec)["vsock"]; got != "EAFNOSUPPORT" {
			t.Errorf("%s: socket(AF_VSOCK) + bind + listen: %s, want EAFNOSUPPORT", name, got)
		}
	}
}

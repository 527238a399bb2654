//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// NetNS is a network namespace made for a pool of workers: it has no interface but its own
// loopback, so nothing in it reaches any other machine or any service of this one (the
// server's port, databases on 127.0.0.1). The one way out is Listener, a socket on
// 127.0.0.1:ProxyPort inside it that the host serves (the egress proxy, sandbox/egress): the
// workers' HTTP(S)_PROXY. The launcher joins the namespace by Path before it executes the
// worker, so the worker and every process it starts live in it.
type NetNS struct {
	fd       int    // the namespace's file, open in the host: it keeps the namespace alive
	path     string // /proc/<host pid>/fd/<fd>, what the launcher opens
	Listener net.Listener
}

// ProxyPort is the port of the proxy's listener on the loopback of every worker namespace
// (each has its own loopback, so one fixed port serves all of them and the workers'
// environment does not depend on which namespace they are in).
const ProxyPort = 3128

// NewNetNS makes a network namespace with its loopback up and a listener on
// 127.0.0.1:port in it (port 0 picks one). It needs CAP_SYS_ADMIN (root, or a host that
// already runs in a user namespace it owns).
func NewNetNS(port int) (*NetNS, error) {
	type made struct {
		ns  *NetNS
		err error
	}
	ch := make(chan made, 1)
	// unshare moves only the calling thread into the new namespace; the thread goes back to
	// the host's namespace before it is unlocked. It must not simply be left to die locked:
	// a Go thread that ends sends PR_SET_PDEATHSIG to every child it ever forked, and this
	// thread may have started workers for other goroutines before.
	go func() {
		runtime.LockOSThread()
		home, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- made{nil, fmt.Errorf("new network namespace: %w", err)}
			return
		}
		defer unix.Close(home)
		ns, err := makeNetNS(port)
		if serr := unix.Setns(home, unix.CLONE_NEWNET); serr != nil {
			// Stranded in the new namespace: the thread must end with the goroutine (locked)
			// rather than run other goroutines there.
			ns.Close()
			ch <- made{nil, fmt.Errorf("new network namespace: return to the host's: %w", serr)}
			return
		}
		runtime.UnlockOSThread()
		ch <- made{ns, err}
	}()
	m := <-ch
	return m.ns, m.err
}

func makeNetNS(port int) (*NetNS, error) {
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return nil, fmt.Errorf("new network namespace: unshare(CLONE_NEWNET): %w", err)
	}
	fd, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("new network namespace: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			unix.Close(fd)
		}
	}()
	if err := loopbackUp(); err != nil {
		return nil, err
	}
	ln, err := listenLoopback(port)
	if err != nil {
		return nil, err
	}
	ok = true
	return &NetNS{fd: fd, path: "/proc/" + strconv.Itoa(os.Getpid()) + "/fd/" + strconv.Itoa(fd), Listener: ln}, nil
}

// loopbackUp brings up the namespace's lo (it starts down, and then even 127.0.0.1 is
// unreachable).
func loopbackUp() error {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("bring up lo: %w", err)
	}
	defer unix.Close(s)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("bring up lo: %w", err)
	}
	if err := unix.IoctlIfreq(s, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring up lo: SIOCGIFFLAGS: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(s, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring up lo: SIOCSIFFLAGS: %w", err)
	}
	return nil
}

// listenLoopback listens on 127.0.0.1:port in the calling thread's namespace (the socket
// stays in that namespace whichever thread later accepts on it).
func listenLoopback(port int) (net.Listener, error) {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("proxy listener: %w", err)
	}
	f := os.NewFile(uintptr(s), "netns-proxy")
	defer f.Close() // FileListener keeps a copy
	if err := unix.SetsockoptInt(s, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		return nil, fmt.Errorf("proxy listener: %w", err)
	}
	if err := unix.Bind(s, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return nil, fmt.Errorf("proxy listener on 127.0.0.1:%d: %w", port, err)
	}
	if err := unix.Listen(s, 128); err != nil {
		return nil, fmt.Errorf("proxy listener: %w", err)
	}
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("proxy listener: %w", err)
	}
	return ln, nil
}

// Path is the file the launcher opens to join the namespace (Spec.NetNS).
func (n *NetNS) Path() string { return n.path }

// Close closes the listener and the host's hold on the namespace; the kernel frees it once
// no process is left in it.
func (n *NetNS) Close() error {
	if n == nil {
		return nil
	}
	err := n.Listener.Close()
	if n.fd >= 0 {
		err = errors.Join(err, unix.Close(n.fd))
		n.fd = -1
	}
	return err
}

// NetNSAvailable reports whether this process can make network namespaces for its workers,
// and if not why.
func NetNSAvailable() error {
	ns, err := NewNetNS(0)
	if err != nil {
		return err
	}
	return ns.Close()
}

// joinNetNS moves the calling thread (the launcher's, which then executes the worker) into
// the namespace at path.
func joinNetNS(path string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("join the worker's network namespace %s: %w", path, err)
	}
	defer unix.Close(fd)
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("join the worker's network namespace %s: setns: %w", path, err)
	}
	return nil
}

// enterNetwork is the launcher's first step: join the worker's network namespace, when the
// spec names one (before Landlock closes /proc, and while the launcher still has the
// capability setns needs), and hold every worker to the socket families it needs
// (sockets_linux.go): UNIX sockets, the way around a namespace, only when the network is
// not isolated.
func enterNetwork(spec Spec) error {
	switch {
	case spec.NetNS != "":
		if err := joinNetNS(spec.NetNS); err != nil {
			return err
		}
	case spec.ProxyPort > 0:
		if err := restrictTCP(spec.ProxyPort); err != nil {
			return fmt.Errorf("hold the worker to its proxy's port: %w", err)
		}
	default:
		return allowSockets(true)
	}
	return allowSockets(false)
}

// Landlock's network rules (ABI 4), which x/sys/unix does not define.
const landlockRuleNetPort = 2

type landlockNetPortAttr struct {
	allowedAccess uint64
	port          uint64
}

// restrictTCP adds a Landlock layer that lets the calling thread (and what it executes)
// connect over TCP to port only, and bind no TCP port. It is the fallback where no network
// namespace can be had: weaker, since the rule is a port and not an address (port on any
// machine is reachable), and UDP is not governed at all.
func restrictTCP(port int) error {
	abi, err := LandlockABI()
	if err != nil {
		return err
	}
	if abi < 4 {
		return fmt.Errorf("Landlock ABI %d has no network rules (4 or later needed)", abi)
	}
	attr := struct{ fs, net uint64 }{net: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP | unix.LANDLOCK_ACCESS_NET_BIND_TCP}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return fmt.Errorf("landlock_create_ruleset (network): %w", errno)
	}
	defer unix.Close(int(fd))
	rule := landlockNetPortAttr{allowedAccess: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, port: uint64(port)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, fd, landlockRuleNetPort, uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("landlock_add_rule (TCP port %d): %w", port, errno)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); errno != 0 {
		return fmt.Errorf("landlock_restrict_self (network): %w", errno)
	}
	return nil
}

// LandlockNetwork reports whether the fallback (restrictTCP) is available.
func LandlockNetwork() bool {
	abi, _ := LandlockABI()
	return abi >= 4
}

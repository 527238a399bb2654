package sandbox

import (
	"fmt"
	"net"
	"strconv"

	"github.com/jean2/jean2/sandbox/egress"
)

// Exit is a launched process tree's only way to the network: an egress proxy that allows
// the hosts its Allowed list names. With a network namespace the tree gets a namespace of
// its own whose loopback holds the proxy at ProxyPort and nothing else; without one, the
// proxy listens on the host's loopback at a free port, and Landlock's TCP rules leave that
// port the only one the tree may connect to (weaker: docs/security.md). Workers, the
// shell's commands and dependency installs each get one the same way.
type Exit struct {
	ns    *NetNS // nil without a namespace
	port  int    // the proxy's port as the tree sees it
	proxy *egress.Proxy
}

// OpenExit starts serving proxy for a tree about to be launched, in a namespace of its own
// when inNS. Close ends both.
func OpenExit(proxy *egress.Proxy, inNS bool) (*Exit, error) {
	e := &Exit{proxy: proxy}
	var ln net.Listener
	if inNS {
		ns, err := NewNetNS(ProxyPort)
		if err != nil {
			return nil, fmt.Errorf("a network namespace for %s: %w", proxy.Tool, err)
		}
		e.ns, e.port, ln = ns, ProxyPort, ns.Listener
	} else {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("an egress proxy for %s: %w", proxy.Tool, err)
		}
		e.port, ln = l.Addr().(*net.TCPAddr).Port, l
	}
	go func() { _ = proxy.Serve(ln) }()
	return e, nil
}

// Apply puts the exit in the launch spec: the namespace to join, or the one port Landlock
// leaves open.
func (e *Exit) Apply(spec *Spec) {
	if e.ns != nil {
		spec.NetNS = e.ns.Path()
	} else {
		spec.ProxyPort = e.port
	}
}

// Port is the proxy's port as the tree sees it (a Seatbelt profile allows only it).
func (e *Exit) Port() int { return e.port }

// Env leads the tree's HTTP clients to the proxy: curl, git, npm, pip, Bun's fetch and Go's
// net/http read these; worker.mjs makes Node's fetch use JEAN2_EGRESS_PROXY. There is no
// NO_PROXY (the environment is clean): every destination goes through the proxy.
func (e *Exit) Env() []string {
	addr := "127.0.0.1:" + strconv.Itoa(e.port)
	url := "http://" + addr
	return []string{
		"HTTP_PROXY=" + url, "HTTPS_PROXY=" + url, "ALL_PROXY=" + url,
		"http_proxy=" + url, "https_proxy=" + url, "all_proxy=" + url,
		"npm_config_proxy=" + url, "npm_config_https_proxy=" + url,
		"JEAN2_EGRESS_PROXY=" + addr,
	}
}

// Close ends the proxy (and its listener) and the host's hold on the namespace. Safe on nil.
func (e *Exit) Close() {
	if e == nil {
		return
	}
	_ = e.proxy.Close()
	_ = e.ns.Close()
}

// TaskLimit caps the processes of a launched tree: by the pids cgroup where there is one
// (pids not nil), which counts the whole tree whatever user it runs as, else by
// RLIMIT_NPROC above the user's current count. max ≤ 0 leaves it unlimited.
func (s *Spec) TaskLimit(max int, pids *Pids) {
	switch {
	case max <= 0:
	case pids != nil:
		s.PidsCgroup, s.PidsMax = pids.Dir(), max
	default:
		s.NProcExtra = max
	}
}

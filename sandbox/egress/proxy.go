package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Resolver looks up the addresses of a name (net.DefaultResolver does).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Proxy is an HTTP proxy for the workers of one tool: CONNECT host:port (https, and any
// other TCP the client tunnels) and absolute-URI requests (plain http). It connects only to
// what Allowed returns at that moment (the tool's approved declaration), so a revoked
// approval holds for the next connection.
type Proxy struct {
	// Tool names the tool in refusals and logs.
	Tool string
	// Allowed returns the tool's approved declaration (nil: nothing). It is asked for every
	// connection; a declaration that does not parse grants nothing.
	Allowed func() []string
	// Resolver resolves names; nil uses net.DefaultResolver (in the host's own network).
	Resolver Resolver
	// Dial connects to the address the proxy chose; nil uses a net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Own are this machine's addresses, refused like loopback unless declared (nil:
	// OwnAddrs at the first connection).
	Own []netip.Addr
	// Log receives one line per refusal; nil logs nothing.
	Log *slog.Logger
	// Advice, when set, says why a target no entry allows is refused and how to allow it
	// (the hint follows the why; start it with "; "). Nil: the tool's declaration in
	// package.json and jean2 tools approve, as for tool workers.
	Advice func(host string, port int) (why, hint string)
	// Ask, when set, is asked about a target no entry allows while its connection waits
	// (the client's CONNECT or request is held, not refused); true means Allowed now
	// covers it, and the connection is checked again. ctx ends when the client goes away.
	// An address that a declared name resolves to but does not grant is not asked about:
	// only declaring the address grants it. Nil refuses at once.
	Ask func(ctx context.Context, target string) bool
	// MaxConns caps the connections served at once (each holds a descriptor of the host);
	// further ones wait in the listener's backlog. 0 means DefaultMaxConns.
	MaxConns int

	once      sync.Once
	srv       *http.Server
	transport *http.Transport

	mu      sync.Mutex
	closed  bool
	tunnels map[net.Conn]struct{} // hijacked connections, which the server no longer tracks
}

// Refusal is the error of a connection the policy does not allow. Its text says which
// target, why, and how to declare it.
type Refusal struct {
	Tool, Target, Why string
	Hint              string
	// undeclared: no entry names the target (what Ask may grant).
	undeclared bool
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("network access to %s refused: %s%s", r.Target, r.Why, r.Hint)
}

// DefaultMaxConns is the connections a proxy serves at once unless told otherwise: a tool
// cannot make the host hold descriptors without bound.
const DefaultMaxConns = 256

// RefusalHeader marks the proxy's own refusals (403), so that clients can tell them from an
// answer of the server they asked.
const RefusalHeader = "X-Jean2-Network-Refused"

// OwnAddrs lists the addresses of this machine's interfaces.
func OwnAddrs() []netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, ip.Unmap())
			}
		}
	}
	return out
}

func (p *Proxy) init() {
	p.once.Do(func() {
		if p.Own == nil {
			p.Own = OwnAddrs()
		}
		p.transport = &http.Transport{
			Proxy:                 nil, // never the host's own proxy settings
			DialContext:           p.dialChecked,
			MaxIdleConnsPerHost:   4,
			IdleConnTimeout:       30 * time.Second,
			ResponseHeaderTimeout: 0,
			DisableCompression:    true, // the client's Accept-Encoding goes through as it is
		}
		p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second, ErrorLog: nil}
	})
}

// Serve answers the workers' connections on l until Close.
func (p *Proxy) Serve(l net.Listener) error {
	p.init()
	max := p.MaxConns
	if max <= 0 {
		max = DefaultMaxConns
	}
	err := p.srv.Serve(&limitListener{Listener: l, slots: make(chan struct{}, max), done: make(chan struct{})})
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops serving and cuts the connections in progress.
func (p *Proxy) Close() error {
	p.init()
	err := p.srv.Close()
	p.transport.CloseIdleConnections()
	p.mu.Lock()
	p.closed = true
	for c := range p.tunnels {
		c.Close()
	}
	p.tunnels = nil
	p.mu.Unlock()
	return err
}

// Check decides a connection to host:port and returns the addresses it may connect to, in
// the resolver's order (a name's disallowed addresses are left out). A target no entry
// names is put to Ask, when set, before it is refused.
func (p *Proxy) Check(ctx context.Context, host string, port int) ([]netip.AddrPort, error) {
	p.init()
	addrs, err := p.check(ctx, host, port)
	var ref *Refusal
	if err != nil && p.Ask != nil && errors.As(err, &ref) && ref.undeclared && p.Ask(ctx, ref.Target) {
		return p.check(ctx, host, port)
	}
	return addrs, err
}

// check decides a connection to host:port by the tool's entries: an address by the entries
// that cover it; a name by the entries that name it, then each address it resolves to.
func (p *Proxy) check(ctx context.Context, host string, port int) ([]netip.AddrPort, error) {
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	target := net.JoinHostPort(host, strconv.Itoa(port))
	var entries []string
	if p.Allowed != nil {
		entries = p.Allowed()
	}
	rules, err := ParseRules(entries)
	if err != nil {
		return nil, &Refusal{Tool: p.Tool, Target: target, Why: fmt.Sprintf("tool %s declares a network entry that is not valid (%v)", p.Tool, err)}
	}
	if literal, err := netip.ParseAddr(host); err == nil {
		return p.checkAddress(literal.Unmap(), host, port, target, rules)
	}
	if !slices.ContainsFunc(rules, func(r Rule) bool { return r.matchesName(host, port) }) {
		return nil, p.notDeclared(host, port, target)
	}
	addrs, err := p.resolve(ctx, host, target)
	if err != nil {
		return nil, err
	}
	return p.grantedAddrs(addrs, host, port, target, rules)
}

// checkAddress decides a connection to an address: granted by an entry that covers it, or
// (when public) by "*".
func (p *Proxy) checkAddress(addr netip.Addr, host string, port int, target string, rules []Rule) ([]netip.AddrPort, error) {
	for _, r := range rules {
		if r.coversAddr(addr, port) {
			return []netip.AddrPort{netip.AddrPortFrom(addr, uint16(port))}, nil
		}
	}
	if kind(addr, p.Own) == "" {
		for _, r := range rules {
			if r.Any && r.portOK(port) {
				return []netip.AddrPort{netip.AddrPortFrom(addr, uint16(port))}, nil
			}
		}
	}
	return nil, p.notDeclared(host, port, target)
}

// notDeclared is the refusal of a target no entry names, saying how to grant it (Ask may
// still grant it).
func (p *Proxy) notDeclared(host string, port int, target string) error {
	name := host
	if strings.Contains(name, ":") {
		name = "[" + name + "]"
	}
	if p.Advice != nil {
		why, hint := p.Advice(host, port)
		return &Refusal{Tool: p.Tool, Target: target, Why: why, Hint: hint, undeclared: true}
	}
	return &Refusal{Tool: p.Tool, Target: target, Why: fmt.Sprintf("tool %s does not declare it", p.Tool), undeclared: true,
		Hint: fmt.Sprintf(`; a person grants it to this version with jean2 tools approve %s --grant network=%s, or the tool adds %q (or "%s:%d") to "jean2": {"permissions": {"network": [...]}} in package.json (or permissions.network in the definition) and a person runs jean2 tools approve %s`, p.Tool, grantTarget(host, name, port), host, name, port, p.Tool)}
}

// grantTarget is the network entry a refusal offers to grant: the host, or for this
// machine and its private networks (localhost, loopback, private, link-local and
// unspecified addresses) only the port asked for, since every service of the machine
// listens there and one refused port must not offer them all. name is host as written
// with a port (IPv6 in brackets).
func grantTarget(host, name string, port int) string {
	if host == "localhost" {
		return fmt.Sprintf("%s:%d", name, port)
	}
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.Unmap()
		if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsUnspecified() {
			return fmt.Sprintf("%s:%d", name, port)
		}
	}
	return host
}

// resolve looks host's addresses up.
func (p *Proxy) resolve(ctx context.Context, host, target string) ([]netip.Addr, error) {
	if host == "localhost" {
		// Never asked of DNS: localhost is this machine whatever a resolver says.
		return []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()}, nil
	}
	res := p.Resolver
	if res == nil {
		res = net.DefaultResolver
	}
	addrs, err := res.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("network access to %s: resolve %s: %w", target, host, err)
	}
	return addrs, nil
}

// grantedAddrs keeps the addresses a declared name leads to that it may reach: public ones,
// and the others (private, this machine) only when an entry covers the address itself, so
// that a name cannot be pointed at what the tool was not granted.
func (p *Proxy) grantedAddrs(addrs []netip.Addr, host string, port int, target string, rules []Rule) ([]netip.AddrPort, error) {
	var refused []string
	var ok []netip.AddrPort
next:
	for _, a := range addrs {
		a = a.Unmap()
		k := kind(a, p.Own)
		if k == "" {
			ok = append(ok, netip.AddrPortFrom(a, uint16(port)))
			continue
		}
		for _, r := range rules {
			if r.coversAddr(a, port) {
				ok = append(ok, netip.AddrPortFrom(a, uint16(port)))
				continue next
			}
		}
		refused = append(refused, a.String()+" ("+k+")")
	}
	if len(ok) > 0 {
		return ok, nil
	}
	if len(refused) == 0 {
		return nil, fmt.Errorf("network access to %s: %s has no address", target, host)
	}
	return nil, &Refusal{Tool: p.Tool, Target: target,
		Why: fmt.Sprintf("%s resolves to %s, which a declared name does not grant", host, strings.Join(refused, ", ")),
		Hint: fmt.Sprintf(`; if tool %s is meant to reach it, declare the address itself (e.g. "%s") in "jean2": {"permissions": {"network": [...]}} and have a person run jean2 tools approve %s`, p.Tool,
			net.JoinHostPort(addrs[0].Unmap().String(), strconv.Itoa(port)), p.Tool)}
}

// dialChecked connects to addr ("host:port") if the policy allows it, to the very address
// it judged.
func (p *Proxy) dialChecked(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 {
		return nil, fmt.Errorf("network access to %s: bad port", addr)
	}
	addrs, err := p.Check(ctx, host, port)
	if err != nil {
		return nil, err
	}
	dial := p.Dial
	if dial == nil {
		d := &net.Dialer{Timeout: 30 * time.Second}
		dial = d.DialContext
	}
	// Each address the policy allowed, in turn (localhost is 127.0.0.1 and ::1).
	var errs []error
	for _, ap := range addrs {
		c, err := dial(ctx, "tcp", ap.String())
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

func (p *Proxy) refuse(w http.ResponseWriter, err error) {
	var ref *Refusal
	status := http.StatusBadGateway
	if errors.As(err, &ref) {
		status = http.StatusForbidden
		w.Header().Set(RefusalHeader, "1")
		if p.Log != nil {
			p.Log.Warn("network access refused", "tool", p.Tool, "target", ref.Target, "reason", ref.Why)
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Connection", "close")
	w.WriteHeader(status)
	io.WriteString(w, err.Error()+"\n")
}

// ServeHTTP answers one request of a worker.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	if !r.URL.IsAbs() || r.URL.Scheme != "http" {
		http.Error(w, "this is jean2's egress proxy: send absolute http:// URLs, or CONNECT host:port", http.StatusBadRequest)
		return
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = pr.In.URL
			pr.Out.Host = pr.In.Host
			pr.Out.Header.Del("Proxy-Authorization")
			pr.Out.Header.Del("Proxy-Connection")
		},
		// Only the proxy's own refusals carry RefusalHeader: workers take it for one.
		ModifyResponse: func(res *http.Response) error {
			res.Header.Del(RefusalHeader)
			return nil
		},
		Transport:     p.transport,
		FlushInterval: -1,
		ErrorHandler:  func(w http.ResponseWriter, _ *http.Request, err error) { p.refuse(w, err) },
	}
	rp.ServeHTTP(w, r)
}

// connect opens a tunnel to r.Host.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	conn, err := p.dialChecked(r.Context(), "tcp", r.Host)
	if err != nil {
		p.refuse(w, err)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		conn.Close()
		http.Error(w, "cannot tunnel", http.StatusInternalServerError)
		return
	}
	client, rw, err := hj.Hijack()
	if err != nil {
		conn.Close()
		return
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		client.Close()
		conn.Close()
		return
	}
	if p.tunnels == nil {
		p.tunnels = map[net.Conn]struct{}{}
	}
	p.tunnels[client], p.tunnels[conn] = struct{}{}, struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.tunnels, client)
		delete(p.tunnels, conn)
		p.mu.Unlock()
	}()
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		client.Close()
		conn.Close()
		return
	}
	splice(client, rw.Reader, conn)
}

// splice copies both ways until both sides are done; bytes the client sent after its
// request are in buffered.
func splice(client net.Conn, buffered *bufio.Reader, upstream net.Conn) {
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(upstream, io.MultiReader(io.LimitReader(buffered, int64(buffered.Buffered())), client))
		closeWrite(upstream)
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(client, upstream)
		closeWrite(client)
		done <- struct{}{}
	}()
	<-done
	<-done
	client.Close()
	upstream.Close()
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}

// limitListener accepts a connection only when one of its slots is free; the slot is given
// back when the connection closes (tunnels included: the hijacked conn is the same value).
type limitListener struct {
	net.Listener
	slots     chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &slotConn{Conn: c, release: func() { <-l.slots }}, nil
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type slotConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// CloseWrite lets a tunnel half-close the worker's side.
func (c *slotConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}

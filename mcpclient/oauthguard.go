package mcpclient

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jean2/jean2/sandbox/egress"
)

// oauthClient is the HTTP client of a hosted server's sign-in and token refreshes. The
// flow follows URLs the server names (its protected-resource metadata, the authorization
// server's metadata, endpoints, registration), so a hostile server on the internet could
// aim jean2's requests at this machine or its network (a loopback admin page, the cloud's
// metadata address). When the MCP server's own address is public, this client connects
// only to public addresses: a loopback, private, link-local, reserved or own address is
// refused when the connection is made, after the name was resolved, so a name that
// resolves one way and then another (DNS rebinding) cannot get round it. A server that is
// itself local or on a private network (the person chose it) keeps an unrestricted client:
// its authorization server is likely beside it.
func oauthClient(serverURL string, base *http.Client) *http.Client {
	if base == nil {
		base = http.DefaultClient
	}
	g := &oauthGuard{serverURL: serverURL}
	tr, ok := http.DefaultTransport.(*http.Transport)
	if !ok || (base.Transport != nil && base.Transport != http.DefaultTransport) {
		return base // a client given by the caller (tests) is used as it is
	}
	tr = tr.Clone()
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: g.control}
	tr.DialContext = d.DialContext
	c := *base
	c.Transport = tr
	return &c
}

// oauthGuard decides, once, whether the MCP server is public, and then judges each
// connection of its OAuth client.
type oauthGuard struct {
	serverURL string
	once      sync.Once
	public    bool // the MCP server's addresses are all public: restrict
	own       []netip.Addr
}

func (g *oauthGuard) init() {
	g.once.Do(func() {
		g.own = egress.OwnAddrs()
		u, err := url.Parse(g.serverURL)
		if err != nil || u.Hostname() == "" {
			return
		}
		host := u.Hostname()
		var addrs []netip.Addr
		if a, err := netip.ParseAddr(host); err == nil {
			addrs = []netip.Addr{a}
		} else if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
			return
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host)
			if err != nil || len(addrs) == 0 {
				// Unresolved now: judged public, the stricter way; a server that is really
				// local is reached by its address or "localhost".
				g.public = true
				return
			}
		}
		for _, a := range addrs {
			if egress.Special(a, g.own) != "" {
				return
			}
		}
		g.public = true
	})
}

// control refuses a connection of a public server's OAuth client to an address that is not
// public. Through a proxy (HTTPS_PROXY and the like) the connection is to the proxy, which
// the person configured, and is let through.
func (g *oauthGuard) control(network, address string, _ syscall.RawConn) error {
	g.init()
	if !g.public {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("sign-in to MCP server %s: cannot judge the address %s: %w", g.serverURL, address, err)
	}
	kind := egress.Special(ap.Addr(), g.own)
	if kind == "" || isProxy(ap) {
		return nil
	}
	return fmt.Errorf("sign-in to MCP server %s: refused to connect to %s, %s: a server on the internet may only send jean2's sign-in to public addresses (its metadata named this one)", g.serverURL, address, kind)
}

// isProxy reports whether ap is the address of a proxy the environment names.
func isProxy(ap netip.AddrPort) bool {
	for _, k := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"} {
		v := os.Getenv(k)
		if v == "" {
			continue
		}
		u, err := url.Parse(v)
		if err != nil || u.Hostname() == "" {
			continue
		}
		port := u.Port()
		if port == "" {
			port = "80"
			if u.Scheme == "https" {
				port = "443"
			}
		}
		if port != fmt.Sprint(ap.Port()) {
			continue
		}
		if a, err := netip.ParseAddr(u.Hostname()); err == nil {
			if a.Unmap() == ap.Addr().Unmap() {
				return true
			}
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", u.Hostname())
		cancel()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if a.Unmap() == ap.Addr().Unmap() {
				return true
			}
		}
	}
	return false
}

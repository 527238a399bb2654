package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// mapResolver answers from a table: the names a test makes up, and what a rebinding DNS
// server would say.
type mapResolver map[string][]string

func (m mapResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	list, ok := m[host]
	if !ok {
		return nil, fmt.Errorf("no such host %s", host)
	}
	var out []netip.Addr
	for _, s := range list {
		out = append(out, netip.MustParseAddr(s))
	}
	return out, nil
}

var testResolver = mapResolver{
	"api.example.com":  {"93.184.216.34"},
	"a.example.com":    {"93.184.216.35"},
	"example.com":      {"93.184.216.36"},
	"rebind.example":   {"127.0.0.1"},
	"intranet.example": {"10.1.2.3"},
	"meta.example":     {"169.254.169.254"},
	"mixed.example":    {"10.0.0.9", "93.184.216.40"},
	"v6local.example":  {"fd00::1"},
	"svc.test":         {"127.0.0.1"},
	"own.example":      {"203.0.113.7"},
	"nat64.example":    {"64:ff9b::7f00:1"},
}

func TestCheck(t *testing.T) {
	cases := []struct {
		allowed []string
		host    string
		port    int
		want    string // address chosen, or "refused: <part of the message>"
	}{
		{nil, "api.example.com", 443, `refused: tool t does not declare it; a person grants it to this version with jean2 tools approve t --grant network=api.example.com, or the tool adds "api.example.com"`},
		{[]string{"api.example.com"}, "api.example.com", 443, "93.184.216.34:443"},
		{[]string{"API.Example.com."}, "api.example.com", 80, "93.184.216.34:80"},
		{[]string{"api.example.com:443"}, "api.example.com", 80, "refused: does not declare"},
		{[]string{"*.example.com:443"}, "a.example.com", 443, "93.184.216.35:443"},
		{[]string{"*.example.com"}, "example.com", 443, "refused: does not declare"},
		{[]string{"*"}, "api.example.com", 443, "93.184.216.34:443"},
		// DNS rebinding: a declared name that resolves to the machine or its networks.
		{[]string{"rebind.example"}, "rebind.example", 80, "refused: rebind.example resolves to 127.0.0.1 (a loopback address)"},
		{[]string{"*"}, "rebind.example", 80, "refused: resolves to 127.0.0.1"},
		{[]string{"intranet.example"}, "intranet.example", 80, "refused: 10.1.2.3 (a private address)"},
		{[]string{"meta.example"}, "meta.example", 80, "refused: 169.254.169.254 (a link-local address)"},
		{[]string{"v6local.example"}, "v6local.example", 80, "refused: fd00::1 (a private address)"},
		{[]string{"own.example"}, "own.example", 80, "refused: 203.0.113.7 (an address of this machine)"},
		{[]string{"nat64.example"}, "nat64.example", 80, "refused: 64:ff9b::7f00:1 (a reserved address)"},
		{[]string{"*"}, "::ffff:127.0.0.1", 80, "refused: does not declare"},
		{[]string{"*"}, "0.0.0.0", 80, "refused: does not declare"},
		{[]string{"mixed.example"}, "mixed.example", 80, "93.184.216.40:80"}, // its private address left out
		// Declared addresses and ranges open what names do not.
		{[]string{"intranet.example", "10.0.0.0/8"}, "intranet.example", 80, "10.1.2.3:80"},
		{[]string{"svc.test", "127.0.0.1:8080"}, "svc.test", 8080, "127.0.0.1:8080"},
		{[]string{"svc.test", "127.0.0.1:8080"}, "svc.test", 8081, "refused: resolves to 127.0.0.1"},
		{[]string{"127.0.0.1:8080"}, "127.0.0.1", 8080, "127.0.0.1:8080"},
		{[]string{"127.0.0.1:8080"}, "127.0.0.2", 8080, "refused: does not declare"},
		{[]string{"*"}, "127.0.0.1", 8080, "refused: does not declare"},
		{[]string{"*"}, "93.184.216.34", 443, "93.184.216.34:443"},
		{[]string{"[::1]:8080"}, "::1", 8080, "[::1]:8080"},
		{[]string{"localhost:8080"}, "localhost", 8080, "127.0.0.1:8080"},
		{[]string{"localhost"}, "127.0.0.1", 9, "127.0.0.1:9"},
		{nil, "localhost", 8080, "refused: does not declare"},
		// A refusal of this machine or its networks offers the one port asked for, never
		// every service there.
		{nil, "127.0.0.1", 34517, "refused: --grant network=127.0.0.1:34517, or"},
		{nil, "localhost", 8080, "refused: --grant network=localhost:8080, or"},
		{nil, "::1", 8080, "refused: --grant network=[::1]:8080, or"},
		{nil, "10.1.2.3", 22, "refused: --grant network=10.1.2.3:22, or"},
		{nil, "93.184.216.34", 443, "refused: --grant network=93.184.216.34, or"},
		{[]string{"127.0.0.1"}, "localhost", 8080, "refused: does not declare"},
		{[]string{"::ffff:127.0.0.1"}, "127.0.0.1", 1, "127.0.0.1:1"},
		{[]string{"not a host"}, "api.example.com", 443, "refused: declares a network entry that is not valid"},
	}
	for _, c := range cases {
		p := &Proxy{Tool: "t", Allowed: func() []string { return c.allowed }, Resolver: testResolver, Own: []netip.Addr{netip.MustParseAddr("203.0.113.7")}}
		aps, err := p.Check(context.Background(), c.host, c.port)
		got := ""
		if err != nil {
			var ref *Refusal
			if !errors.As(err, &ref) {
				t.Fatalf("%v %s:%d: error %v is not a refusal", c.allowed, c.host, c.port, err)
			}
			got = "refused: " + err.Error()
		} else {
			got = aps[0].String()
		}
		want := c.want
		if strings.HasPrefix(want, "refused: ") {
			if !strings.HasPrefix(got, "refused: ") || !strings.Contains(got, strings.TrimPrefix(want, "refused: ")) {
				t.Errorf("%v %s:%d: got %q, want %q", c.allowed, c.host, c.port, got, want)
			}
			continue
		}
		if got != want {
			t.Errorf("%v %s:%d: got %q, want %q", c.allowed, c.host, c.port, got, want)
		}
	}
}

// TestCheckAddresses: every allowed address is given, in the resolver's order, and only
// those: the dial tries them in turn.
func TestCheckAddresses(t *testing.T) {
	p := &Proxy{Tool: "t", Allowed: func() []string { return []string{"localhost", "mixed.example"} }, Resolver: testResolver, Own: []netip.Addr{}}
	aps, err := p.Check(context.Background(), "localhost", 80)
	if err != nil || len(aps) != 2 || aps[0].String() != "127.0.0.1:80" || aps[1].String() != "[::1]:80" {
		t.Fatalf("localhost: %v %v", aps, err)
	}
	aps, err = p.Check(context.Background(), "mixed.example", 80)
	if err != nil || len(aps) != 1 || aps[0].String() != "93.184.216.40:80" {
		t.Fatalf("mixed.example: %v %v", aps, err)
	}
}

func TestParseRule(t *testing.T) {
	for _, bad := range []string{"", "https://api.example.com", "a b", "host:0", "host:70000", "*.", "-a.com", "10.0.0.0/33", "[::1", "user@host"} {
		if _, err := ParseRule(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	for _, good := range []string{"api.github.com", "api.github.com:443", "*.example.com:443", "*", "127.0.0.1", "[::1]:80", "::1", "10.0.0.0/8", "10.0.0.0/8:443", "fc00::/7", "localhost:3000"} {
		if _, err := ParseRule(good); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
}

// TestProxyServes runs the proxy on a listener: a tunnel and a plain request to a declared
// loopback server go through (bodies both ways), an undeclared one gets a 403 that says why,
// and a name that resolves to loopback is refused although it is declared.
func TestProxyServes(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		// A server cannot pass its answer off as the proxy's refusal.
		w.Header().Set(RefusalHeader, "1")
		fmt.Fprintf(w, "backend %s %s %d", r.Method, r.URL.Path, len(b))
	}))
	defer backend.Close()
	u, _ := url.Parse(backend.URL)
	port, _ := strconv.Atoi(u.Port())
	allowed := []string{"svc.test", "127.0.0.1:" + u.Port(), "rebind.example"}
	p := &Proxy{Tool: "t", Allowed: func() []string { return allowed }, Resolver: testResolver}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(l)
	defer p.Close()
	proxyURL, _ := url.Parse("http://" + l.Addr().String())
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}}

	// Plain http through the proxy, by name and by address.
	for _, target := range []string{backend.URL, fmt.Sprintf("http://svc.test:%d", port)} {
		res, err := client.Post(target+"/x", "text/plain", strings.NewReader(strings.Repeat("y", 70000)))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || string(b) != "backend POST /x 70000" {
			t.Fatalf("%s: %d %q", target, res.StatusCode, b)
		}
		if res.Header.Get(RefusalHeader) != "" {
			t.Fatalf("%s: the server's %s reached the client", target, RefusalHeader)
		}
	}
	// Refused: undeclared port, and a declared name that resolves to loopback on a port no
	// address entry covers.
	for _, target := range []string{fmt.Sprintf("http://127.0.0.1:%d", port+1), fmt.Sprintf("http://rebind.example:%d", port+1)} {
		res, err := client.Get(target + "/")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden || res.Header.Get(RefusalHeader) == "" || !strings.Contains(string(b), "refused") {
			t.Fatalf("%s: %d %q", target, res.StatusCode, b)
		}
	}
	// A CONNECT tunnel, then HTTP inside it.
	tunnel := func(target string) (string, string) {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
		br := bufio.NewReader(c)
		res, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != 200 {
			b, _ := io.ReadAll(res.Body)
			return res.Status, string(b)
		}
		fmt.Fprintf(c, "GET /in HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		res, err = http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		return res.Status, string(b)
	}
	if st, body := tunnel(u.Host); body != "backend GET /in 0" {
		t.Fatalf("tunnel to a declared address: %s %q", st, body)
	}
	if st, body := tunnel(fmt.Sprintf("localhost:%d", port)); !strings.HasPrefix(st, "403") || !strings.Contains(body, `network access to localhost:`+u.Port()+` refused: tool t does not declare it`) {
		t.Fatalf("tunnel to localhost: %s %q", st, body)
	}
}

// TestProxyConnectionCap: a tool cannot make the host hold connections without bound; past
// MaxConns a connection waits in the backlog until one closes.
func TestProxyConnectionCap(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer backend.Close()
	u, _ := url.Parse(backend.URL)
	p := &Proxy{Tool: "t", Allowed: func() []string { return []string{u.Host} }, MaxConns: 2}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(l)
	defer p.Close()
	var idle []net.Conn
	for range 2 { // tunnels held open
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", u.Host, u.Host)
		if res, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect}); err != nil || res.StatusCode != 200 {
			t.Fatalf("tunnel: %v %v", res, err)
		}
		idle = append(idle, c)
	}
	third, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	fmt.Fprintf(third, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", u.Host, u.Host)
	third.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	br := bufio.NewReader(third)
	if _, err := br.Peek(1); err == nil {
		t.Fatal("a third connection was served past MaxConns 2")
	}
	idle[0].Close()
	third.SetReadDeadline(time.Time{})
	if res, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect}); err != nil || res.StatusCode != 200 {
		t.Fatalf("the third connection once a slot was free: %v %v", res, err)
	}
	idle[1].Close()
}

// TestAllowedIsReadPerConnection: the declaration is asked for at every connection, so a
// revoked approval holds for the next one of a worker already running.
func TestAllowedIsReadPerConnection(t *testing.T) {
	allowed := []string{"api.example.com"}
	p := &Proxy{Tool: "t", Allowed: func() []string { return allowed }, Resolver: testResolver}
	if _, err := p.Check(context.Background(), "api.example.com", 443); err != nil {
		t.Fatal(err)
	}
	allowed = nil
	if _, err := p.Check(context.Background(), "api.example.com", 443); err == nil {
		t.Fatal("a withdrawn declaration still allowed the connection")
	}
}

// Ask is put a target no entry names, with the connection held: granted, the connection
// is checked again against what Allowed now says; refused, it stays refused. A name whose
// address is special is not asked about (declaring the name never grants that address).
func TestCheckAsks(t *testing.T) {
	var allowed, asked []string
	p := &Proxy{Tool: "t", Resolver: testResolver, Own: []netip.Addr{},
		Allowed: func() []string { return allowed },
		Ask: func(_ context.Context, target string) bool {
			asked = append(asked, target)
			if target == "api.example.com:443" {
				allowed = append(allowed, target)
				return true
			}
			return false
		}}
	got, err := p.Check(context.Background(), "api.example.com", 443)
	if err != nil || len(got) != 1 || got[0].String() != "93.184.216.34:443" {
		t.Fatalf("granted while held: %v %v", got, err)
	}
	if _, err := p.Check(context.Background(), "example.com", 443); err == nil {
		t.Fatal("refused by Ask, yet connected")
	}
	allowed = append(allowed, "rebind.example")
	if _, err := p.Check(context.Background(), "rebind.example", 443); err == nil {
		t.Fatal("a name that resolves to loopback connected")
	}
	if want := []string{"api.example.com:443", "example.com:443"}; strings.Join(asked, ",") != strings.Join(want, ",") {
		t.Fatalf("asked %v, want %v", asked, want)
	}
}

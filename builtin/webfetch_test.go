package builtin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jean2/jean2/ask"
	"github.com/jean2/jean2/builtin"
	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/sandbox/egress"
	"github.com/jean2/jean2/tool"
)

type fetchFixture struct {
	t     *testing.T
	h     *host.Host
	ws    string
	asked []tool.Ask
	grant bool
}

func newFetchFixture(t *testing.T, opts builtin.WebFetchOptions) *fetchFixture {
	t.Helper()
	root := t.TempDir()
	layout, err := host.LayoutFromEnv(func(k string) string {
		if k == "JEAN2_HOME" {
			return filepath.Join(root, "home")
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := layout.Ensure(); err != nil {
		t.Fatal(err)
	}
	h, err := host.New(context.Background(), host.Options{
		Layout: layout, Builtins: []tool.Tool{builtin.WebFetch(opts)}, ServerEnv: []string{},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	return &fetchFixture{t: t, h: h, ws: root, grant: true}
}

func (f *fetchFixture) fetch(args map[string]any) (host.Outcome, map[string]string) {
	f.t.Helper()
	raw, _ := json.Marshal(args)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := f.h.Invoke(ctx, host.Call{Tool: "webfetch", Args: raw, SessionID: "s1", Workspace: host.Workspace{ID: "w1", Path: f.ws},
		Asker: tool.AskerFunc(func(_ context.Context, a tool.Ask) (json.RawMessage, error) {
			f.asked = append(f.asked, a)
			return json.Marshal(map[string]any{"granted": f.grant, "duration": "session"})
		})})
	var res map[string]string
	if out.Result.Success {
		_ = json.Unmarshal(out.Result.Result, &res)
	}
	return out, res
}

const page = `<!doctype html><html><head><title>Test  page</title><style>p{color:red}</style><script>var x = 1;</script></head>
<body><h1>Hello</h1><p>Some <strong>bold</strong> text &amp; a <a href="/next">link</a>.</p></body></html>`

func TestWebFetchFormatsAndGrants(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/plain" {
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "just text")
			return
		}
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, page)
	}))
	defer srv.Close()
	f := newFetchFixture(t, builtin.WebFetchOptions{})

	// Refused: nothing is fetched.
	f.grant = false
	out, _ := f.fetch(map[string]any{"url": srv.URL + "/"})
	if out.Result.Success || !strings.HasPrefix(out.Result.Error, tool.UserRejection) || hits.Load() != 0 || len(f.asked) != 1 {
		t.Fatalf("refused: %+v hits %d", out.Result, hits.Load())
	}
	entry := strings.TrimPrefix(srv.URL, "http://")
	if a := f.asked[0]; !strings.Contains(a.Question, entry) || a.Resource != "network" || a.Risk != "high" {
		t.Fatalf("ask %+v", a)
	}

	f.grant = true
	out, res := f.fetch(map[string]any{"url": srv.URL + "/"})
	if !out.Result.Success {
		t.Fatal(out.Result)
	}
	want := "# Hello\n\nSome **bold** text & a [link](" + srv.URL + "/next)."
	if res["content"] != want || res["title"] != "Test page" || res["contentType"] != "text/html; charset=utf-8" {
		t.Fatalf("markdown: %q %+v", res["content"], res)
	}
	if err := tool.CheckVisualization(out.Result.Visualization); err != nil || !strings.Contains(string(out.Result.Visualization), `"type":"none"`) || !strings.Contains(string(out.Result.Visualization), "Fetched: "+srv.URL) {
		t.Fatalf("viz %s %v", out.Result.Visualization, err)
	}
	// Granted for the session: the same host is not asked again.
	asked := len(f.asked)
	_, res = f.fetch(map[string]any{"url": srv.URL + "/", "format": "text"})
	if res["content"] != "Test page Hello Some bold text & a link ." || len(f.asked) != asked {
		t.Fatalf("text: %q asked %d→%d", res["content"], asked, len(f.asked))
	}
	_, res = f.fetch(map[string]any{"url": srv.URL + "/", "format": "html"})
	if res["content"] != page {
		t.Fatalf("html: %q", res["content"])
	}
	_, res = f.fetch(map[string]any{"url": srv.URL + "/plain"})
	if res["content"] != "just text" || res["title"] != srv.URL+"/plain" {
		t.Fatalf("plain: %+v", res)
	}
	out, _ = f.fetch(map[string]any{"url": srv.URL + "/missing"})
	if out.Result.Success || out.Result.Error != "Request failed with status code: 404" {
		t.Fatalf("404: %+v", out.Result)
	}
	out, _ = f.fetch(map[string]any{"url": "file:///etc/passwd"})
	if out.Result.Success || !strings.Contains(out.Result.Error, "Only HTTP and HTTPS") {
		t.Fatalf("file URL: %+v", out.Result)
	}
}

// A redirect to another host asks again; refused, the other host is never reached.
func TestWebFetchRedirectAsksForTheNewHost(t *testing.T) {
	var otherHits atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		fmt.Fprint(w, "other")
	}))
	defer other.Close()
	first := httptest.NewServer(http.RedirectHandler(other.URL+"/x", http.StatusFound))
	defer first.Close()
	f := newFetchFixture(t, builtin.WebFetchOptions{})
	f.asked = nil
	answers := []bool{true, false}
	raw, _ := json.Marshal(map[string]any{"url": first.URL})
	out := f.h.Invoke(context.Background(), host.Call{Tool: "webfetch", Args: raw, SessionID: "s1", Workspace: host.Workspace{ID: "w1", Path: f.ws},
		Asker: tool.AskerFunc(func(_ context.Context, a tool.Ask) (json.RawMessage, error) {
			f.asked = append(f.asked, a)
			return json.Marshal(answers[len(f.asked)-1])
		})})
	if out.Result.Success || !strings.Contains(out.Result.Error, tool.UserRejection) || otherHits.Load() != 0 || len(f.asked) != 2 ||
		!strings.Contains(f.asked[1].Question, strings.TrimPrefix(other.URL, "http://")) {
		t.Fatalf("%+v hits %d asked %+v", out.Result, otherHits.Load(), f.asked)
	}
}

type fixedResolver []netip.Addr

func (r fixedResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return r, nil
}

// The egress rules hold: a granted name that resolves to this machine (DNS rebinding) is
// refused; only the address itself, granted, reaches it.
func TestWebFetchNameResolvingToLoopbackIsRefused(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	f := newFetchFixture(t, builtin.WebFetchOptions{Resolver: fixedResolver{netip.MustParseAddr("127.0.0.1")}})
	out, _ := f.fetch(map[string]any{"url": "http://rebind.example.com:" + port + "/"})
	if out.Result.Success || !strings.Contains(out.Result.Error, "refused") || hits.Load() != 0 {
		t.Fatalf("%+v hits %d", out.Result, hits.Load())
	}
}

func TestWebFetchCaps(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			w.Header().Set("Content-Type", "text/plain")
			// No Content-Length: the cap holds on what is read.
			for i := 0; i < 300; i++ {
				fmt.Fprint(w, strings.Repeat("x", 1000))
				w.(http.Flusher).Flush()
			}
		case "/declared":
			w.Header().Set("Content-Length", "10000000")
			w.WriteHeader(200)
		case "/slow":
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}
	}))
	defer srv.Close()
	f := newFetchFixture(t, builtin.WebFetchOptions{MaxBytes: 100_000})
	out, _ := f.fetch(map[string]any{"url": srv.URL + "/big"})
	if out.Result.Success || !strings.Contains(out.Result.Error, "Response too large") {
		t.Fatalf("big: %+v", out.Result)
	}
	out, _ = f.fetch(map[string]any{"url": srv.URL + "/declared"})
	if out.Result.Success || !strings.Contains(out.Result.Error, "Response too large: 10000000") {
		t.Fatalf("declared: %+v", out.Result)
	}
	start := time.Now()
	out, _ = f.fetch(map[string]any{"url": srv.URL + "/slow", "timeout": 0.5})
	if out.Result.Success || !strings.Contains(out.Result.Error, "timed out") || time.Since(start) > 5*time.Second {
		t.Fatalf("slow: %+v after %s", out.Result, time.Since(start))
	}
}

// The attack: a hostile model reply (or a page it read) has webfetch fetch an address that
// is this machine's or a network around it without being loopback or RFC 1918 — the
// machine's own interface address, CGNAT (100.64.0.0/10, where Tailscale puts its peers),
// NAT64, reserved ranges — in a session nobody watches. Before, webfetch
// labelled such an ask "medium" with no word of what the address is, and the hub's
// unattended policy at "medium" granted it: the fetch reached a service listening on the
// machine's own address. Now every address the egress rules call special is asked at
// "high" and named for what it is; only a public address stays "medium".
func TestWebFetchAttackSpecialAddressUnattended(t *testing.T) {
	policy, err := ask.NewPolicy("medium")
	if err != nil {
		t.Fatal(err)
	}
	f := newFetchFixture(t, builtin.WebFetchOptions{Timeout: 3 * time.Second})
	invoke := func(u string) (host.Outcome, []tool.Ask) {
		var asked []tool.Ask
		raw, _ := json.Marshal(map[string]any{"url": u})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out := f.h.Invoke(ctx, host.Call{Tool: "webfetch", Args: raw, SessionID: "s-unattended", Workspace: host.Workspace{ID: "w1", Path: f.ws},
			Asker: recordingPolicy{policy, &asked}})
		return out, asked
	}

	// A service on this machine's own (non-loopback, non-private) address, where it has one.
	var own netip.Addr
	for _, a := range egress.OwnAddrs() {
		if a.Is4() && a.IsGlobalUnicast() && !a.IsPrivate() {
			own = a
			break
		}
	}
	if own.IsValid() {
		ln, err := net.Listen("tcp", net.JoinHostPort(own.String(), "0"))
		if err != nil {
			t.Fatal(err)
		}
		var hits atomic.Int32
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			fmt.Fprint(w, "internal admin page")
		})}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		out, asked := invoke("http://" + ln.Addr().String() + "/admin")
		if hits.Load() != 0 || out.Result.Success {
			t.Errorf("this machine's address %s: fetched unattended (%d requests): %s", ln.Addr(), hits.Load(), out.Result.Result)
		}
		if len(asked) != 1 || asked[0].Risk != "high" || !strings.Contains(asked[0].Description, "this machine") {
			t.Errorf("this machine's address %s: asked %+v", ln.Addr(), asked)
		}
	} else {
		t.Logf("no public-looking address on this machine's interfaces: that case is not run")
	}

	for _, u := range []string{"http://100.64.0.1:9/", "http://[64:ff9b::7f00:1]:9/", "http://240.0.0.1:9/", "http://[2002:7f00:1::1]:9/"} {
		out, asked := invoke(u)
		if len(asked) != 1 || asked[0].Risk != "high" || out.Result.Error == "" || !strings.Contains(out.Result.Error, tool.UserRejection) {
			t.Errorf("%s: asked %+v, outcome %+v", u, asked, out.Result)
		}
	}
	// A public address is an ordinary fetch's risk: asked "medium" (and not dialled here,
	// since the test answers no).
	deny, _ := ask.NewPolicy("low")
	var asked []tool.Ask
	raw, _ := json.Marshal(map[string]any{"url": "http://93.184.215.14:9/"})
	f.h.Invoke(context.Background(), host.Call{Tool: "webfetch", Args: raw, SessionID: "s-public", Workspace: host.Workspace{ID: "w1", Path: f.ws},
		Asker: recordingPolicy{deny, &asked}})
	if len(asked) != 1 || asked[0].Risk != "medium" {
		t.Errorf("a public address: asked %+v", asked)
	}
}

// recordingPolicy is an unattended policy that notes each ask it decides.
type recordingPolicy struct {
	ask.Policy
	asked *[]tool.Ask
}

func (r recordingPolicy) AskPermission(ctx context.Context, a tool.Ask) (ask.Decision, error) {
	*r.asked = append(*r.asked, a)
	return r.Policy.AskPermission(ctx, a)
}

// TestWebFetchRefusals covers what webfetch refuses before or instead of a page: bad
// input, a refused first ask, a failing status, too many redirects, a redirect off HTTP.
func TestWebFetchRefusals(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/missing":
			http.NotFound(w, r)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/ftp":
			http.Redirect(w, r, "ftp://example.com/x", http.StatusFound)
		}
	}))
	defer srv.Close()
	f := newFetchFixture(t, builtin.WebFetchOptions{})
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"url": 5}, "invalid arguments for webfetch"},
		{map[string]any{"url": "http://a b/%zz"}, "Invalid URL: http://a b/%zz"},
		{map[string]any{"url": "file:///etc/passwd"}, "Only HTTP and HTTPS URLs are allowed. Blocked: file:"},
		{map[string]any{"url": "http:///x"}, "Invalid URL: http:///x"},
		{map[string]any{"url": "http://me:secret@example.com/"}, "Invalid URL: http://me:xxxxx@example.com/: credentials in a URL are not sent"},
		{map[string]any{"url": srv.URL + "/missing"}, "Request failed with status code: 404"},
		{map[string]any{"url": srv.URL + "/loop"}, "stopped after"},
		{map[string]any{"url": srv.URL + "/ftp"}, "redirect to ftp://example.com/x: only HTTP and HTTPS URLs are allowed"},
	} {
		out, _ := f.fetch(c.args)
		if out.Result.Success || !strings.Contains(out.Result.Error, c.want) {
			t.Errorf("%v: %+v, want an error with %q", c.args, out.Result, c.want)
		}
	}
	before := hits.Load()
	f.grant = false
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer other.Close()
	out, _ := f.fetch(map[string]any{"url": other.URL})
	if out.Result.Success || !strings.HasPrefix(out.Result.Error, tool.UserRejection) || hits.Load() != before {
		t.Fatalf("refused ask: %+v hits %d→%d", out.Result, before, hits.Load())
	}
}

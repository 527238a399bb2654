package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2"

	"github.com/jean2/jean2/sandbox/egress"
	"github.com/jean2/jean2/tool"
)

// WebFetchOptions configure the webfetch built-in.
type WebFetchOptions struct {
	// MaxBytes caps a response's body (default 5 MiB, as the catalogue's tool).
	MaxBytes int64
	// Timeout is a fetch's time when the call gives none (default 30 s); MaxTimeout caps
	// what a call may ask (default 120 s).
	Timeout, MaxTimeout time.Duration
	// UserAgent is sent with every request ("" : a browser's, as the catalogue's tool).
	UserAgent string
	// Resolver resolves names for the egress policy (nil: net.DefaultResolver).
	Resolver egress.Resolver
}

const (
	defaultFetchBytes   = 5 << 20
	defaultFetchTimeout = 30 * time.Second
	maxFetchTimeout     = 120 * time.Second
	maxFetchRedirects   = 10
)

const webfetchSchema = `{
  "type": "object",
  "properties": {
    "url": {"type": "string", "description": "The URL to fetch content from (must start with http:// or https://)"},
    "format": {"type": "string", "description": "Output format: markdown (default), text, or html", "enum": ["markdown", "text", "html"]},
    "timeout": {"type": "number", "description": "Timeout in seconds (max 120)"}
  },
  "required": ["url"]
}`

const webfetchDescription = `Fetch content from a URL and convert to readable format.

## Permission Model

The person is asked once per host and session before it is fetched (and for each new host a redirect leads to). Addresses of this machine and private networks are reached only when the person allows that very address. Responses are capped at 5 MB.`

type webfetchInput struct {
	URL     string  `json:"url"`
	Format  string  `json:"format,omitempty"`
	Timeout float64 `json:"timeout,omitempty"`
}

type webfetchResult struct {
	Content     string `json:"content"`
	Title       string `json:"title"`
	ContentType string `json:"contentType"`
}

type webfetchTool struct {
	def  tool.Definition
	opts WebFetchOptions
}

// WebFetch returns the webfetch built-in: it fetches in the host, under the egress policy
// of tool workers (sandbox/egress), with the destinations a person granted for the session.
func WebFetch(opts WebFetchOptions) tool.Tool {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = defaultFetchBytes
	}
	if opts.Timeout <= 0 {
		opts.Timeout = defaultFetchTimeout
	}
	if opts.MaxTimeout <= 0 {
		opts.MaxTimeout = maxFetchTimeout
	}
	if opts.UserAgent == "" {
		opts.UserAgent = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36"
	}
	return &webfetchTool{opts: opts, def: tool.Definition{
		Name: "webfetch", Description: webfetchDescription, InputSchema: json.RawMessage(webfetchSchema),
		Timeout: int((opts.MaxTimeout + 30*time.Second) / time.Millisecond),
	}}
}

func (t *webfetchTool) Definition() tool.Definition { return t.def }

// fetchEntryFor is the egress entry a grant of u's host opens: the name (its public
// addresses), or, for an address or localhost, that address and port only. special says
// what the address is when the egress rules never let a name reach it (loopback, private,
// this machine's, CGNAT, NAT64, reserved …), "" for a name or a public address: a grant of
// such an address is a person's, asked at high risk.
func fetchEntryFor(u *url.URL) (entry, special string) {
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	port := u.Port()
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.Unmap()
		return net.JoinHostPort(a.String(), port), egress.Special(a, egress.OwnAddrs())
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return "localhost:" + port, "a loopback address"
	}
	return host, ""
}

func (t *webfetchTool) Execute(ctx context.Context, c *tool.Context, args json.RawMessage) tool.Result {
	var in webfetchInput
	if err := json.Unmarshal(args, &in); err != nil {
		return tool.Errorf("invalid arguments for webfetch: %v", err)
	}
	u, format, err := checkFetchInput(in)
	if err != nil {
		return tool.Errorf("%s", err)
	}
	timeout := t.opts.Timeout
	if in.Timeout > 0 {
		timeout = min(time.Duration(in.Timeout*float64(time.Second)), t.opts.MaxTimeout)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	grants := &fetchGrants{t: t, c: c}
	if err := grants.allow(ctx, u); err != nil {
		return tool.Result{Error: err.Error()}
	}
	client, transport := t.client(grants, timeout)
	defer transport.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return tool.Errorf("Invalid URL: %s: %v", in.URL, err)
	}
	req.Header.Set("User-Agent", t.opts.UserAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
	req.Header.Set("Accept-Language", "en-US,en;q=0.5")
	resp, err := client.Do(req)
	if err != nil {
		return fetchFailure(ctx, u, timeout, err)
	}
	defer resp.Body.Close()
	body, failure := t.readBody(ctx, u, timeout, resp)
	if failure != nil {
		return *failure
	}
	contentType := resp.Header.Get("Content-Type")
	content, title, err := renderFetched(string(body), contentType, format, in.URL, resp.Request.URL)
	if err != nil {
		return tool.Errorf("convert %s to markdown: %v", u.Redacted(), err)
	}
	display := in.URL
	if r := []rune(display); len(r) > 80 {
		display = string(r[:77]) + "..."
	}
	out := tool.Success(webfetchResult{Content: content, Title: title, ContentType: contentType})
	out.Visualization, _ = json.Marshal(map[string]string{"type": tool.VizNone, "message": "Fetched: " + display})
	return out
}

// checkFetchInput parses the URL and the format; the error is the message a model reads.
func checkFetchInput(in webfetchInput) (*url.URL, string, error) {
	u, err := url.Parse(strings.TrimSpace(in.URL))
	if err != nil {
		return nil, "", fmt.Errorf("Invalid URL: %s", in.URL)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, "", fmt.Errorf("Only HTTP and HTTPS URLs are allowed. Blocked: %s:", u.Scheme)
	}
	if u.Host == "" {
		return nil, "", fmt.Errorf("Invalid URL: %s", in.URL)
	}
	if u.User != nil {
		return nil, "", fmt.Errorf("Invalid URL: %s: credentials in a URL are not sent", u.Redacted())
	}
	format := in.Format
	if format == "" {
		format = "markdown"
	}
	if format != "markdown" && format != "text" && format != "html" {
		return nil, "", fmt.Errorf("format %q is not one of markdown, text, html", in.Format)
	}
	return u, format, nil
}

// fetchGrants are the hosts one call may reach: the first URL's and each redirect's, each
// asked for once. The egress policy reads the list at every dial.
type fetchGrants struct {
	t       *webfetchTool
	c       *tool.Context
	allowed []string
}

func (g *fetchGrants) allow(ctx context.Context, u *url.URL) error {
	entry, special := fetchEntryFor(u)
	for _, a := range g.allowed {
		if a == entry {
			return nil
		}
	}
	ok, err := g.t.ask(ctx, g.c, u, entry, special)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New(tool.UserRejection)
	}
	g.allowed = append(g.allowed, entry)
	return nil
}

// client builds an HTTP client whose every dial goes through the egress policy (never the
// server's proxy settings) and whose every redirect asks for its host.
func (t *webfetchTool) client(grants *fetchGrants, timeout time.Duration) (*http.Client, *http.Transport) {
	policy := &egress.Proxy{Tool: "webfetch", Allowed: func() []string { return grants.allowed }, Resolver: t.opts.Resolver}
	dialer := &net.Dialer{Timeout: 15 * time.Second}
	transport := &http.Transport{
		Proxy: nil, // never the server's proxy settings: the policy decides here
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return dialChecked(ctx, policy, dialer, addr)
		},
		TLSHandshakeTimeout:    15 * time.Second,
		ResponseHeaderTimeout:  timeout,
		MaxResponseHeaderBytes: 1 << 20,
	}
	client := &http.Client{Transport: transport, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxFetchRedirects {
			return fmt.Errorf("stopped after %d redirects", maxFetchRedirects)
		}
		if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
			return fmt.Errorf("redirect to %s: only HTTP and HTTPS URLs are allowed", req.URL.Redacted())
		}
		// The redirect's request carries the call's context, deadline included.
		return grants.allow(req.Context(), req.URL)
	}}
	return client, transport
}

// dialChecked dials only the addresses the policy lets addr resolve to, trying each in turn.
func dialChecked(ctx context.Context, policy *egress.Proxy, dialer *net.Dialer, addr string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, _ := strconv.Atoi(portText)
	addrs, err := policy.Check(ctx, host, port)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, a := range addrs {
		conn, err := dialer.DialContext(ctx, "tcp", a.String())
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// fetchFailure says why a request got no response.
func fetchFailure(ctx context.Context, u *url.URL, timeout time.Duration, err error) tool.Result {
	// The call's deadline, or the transport's own wait for headers (the same timeout,
	// which can fire first): either way the fetch timed out.
	var ne net.Error
	if ctx.Err() == context.DeadlineExceeded || (errors.As(err, &ne) && ne.Timeout()) {
		return tool.Errorf("fetch %s: timed out after %s", u.Redacted(), timeout)
	}
	var ref *egress.Refusal
	if errors.As(err, &ref) {
		return tool.Errorf("fetch %s: network access to %s refused: %s", u.Redacted(), ref.Target, ref.Why)
	}
	if strings.Contains(err.Error(), tool.UserRejection) {
		return tool.Errorf("%s", tool.UserRejection)
	}
	return tool.Errorf("fetch %s: %v", u.Redacted(), err)
}

// readBody reads a successful response up to the size cap, refusing a failing status and
// a body over the cap, whether declared or read.
func (t *webfetchTool) readBody(ctx context.Context, u *url.URL, timeout time.Duration, resp *http.Response) ([]byte, *tool.Result) {
	refused := func(format string, args ...any) ([]byte, *tool.Result) {
		r := tool.Errorf(format, args...)
		return nil, &r
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return refused("Request failed with status code: %d", resp.StatusCode)
	}
	max := t.opts.MaxBytes
	if resp.ContentLength > max {
		return refused("Response too large: %d bytes (max %d)", resp.ContentLength, max)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return refused("fetch %s: timed out after %s", u.Redacted(), timeout)
		}
		return refused("fetch %s: read the response: %v", u.Redacted(), err)
	}
	if int64(len(body)) > max {
		return refused("Response too large: more than %d bytes", max)
	}
	return body, nil
}

// renderFetched turns an HTML page into the format asked for and finds its title; other
// content is returned as it came, titled by the URL asked for.
func renderFetched(content, contentType, format, asked string, final *url.URL) (string, string, error) {
	mediaType, _, _ := mime.ParseMediaType(contentType)
	isHTML := mediaType == "text/html" || mediaType == "application/xhtml+xml"
	title := asked
	if isHTML {
		if tt := fetchHTMLTitle(content); tt != "" {
			title = tt
		}
	}
	switch {
	case format == "markdown" && isHTML:
		md, err := htmltomarkdown.ConvertString(content, fetchDomain(final))
		if err != nil {
			return "", "", err
		}
		content = md
	case format == "text" && isHTML:
		content = fetchHTMLText(content)
	}
	return content, title, nil
}

// ask asks the person whether host may be fetched for this session; the host's grants
// answer for a host already allowed.
func (t *webfetchTool) ask(ctx context.Context, c *tool.Context, u *url.URL, entry, special string) (bool, error) {
	risk, desc := "medium", fmt.Sprintf("webfetch wants to fetch %s.", u.Redacted())
	if special != "" {
		risk = "high"
		desc += " " + entry + " is " + special + ", this machine or a network around it: services there are not meant for the web."
	}
	if u.Scheme == "http" {
		desc += " The connection is not encrypted (http)."
	}
	meta, _ := json.Marshal(map[string]any{"permissionKey": "webfetch:host", "url": u.Redacted(), "host": entry, "isHttp": u.Scheme == "http"})
	return shellAskBool(ctx, c, tool.Ask{
		Type:        tool.AskPermission,
		Question:    fmt.Sprintf("Allow webfetch to fetch from %s?", entry),
		Description: desc,
		Risk:        risk,
		Resource:    "network",
		Patterns:    []string{"webfetch:" + entry},
		Duration:    tool.DurationSession,
		Metadata:    meta,
	})
}

package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jean2/jean2/sandbox"
)

const fetcher = `export const definition = {
  name: 'fetcher', description: 'fetches a URL',
  inputSchema: { type: 'object', properties: { url: { type: 'string' } }, required: ['url'] },
};
export async function execute(input, ctx) {
  try {
    const res = await ctx.fetch(input.url);
    return { success: true, result: { body: await res.text() } };
  } catch (e) { return { success: true, result: { refused: String(e.message) } }; }
}
`

// The jean2 binary end to end: a tool that declares a loopback service in package.json is
// listed and approved with it, then reaches it through the egress proxy; the server's
// stand-in it does not declare is refused with words.
func TestNetworkDeclarationThroughTheCLI(t *testing.T) {
	if err := sandbox.NetNSAvailable(); err != nil {
		t.Skipf("no network namespaces here: %v", err)
	}
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "declared service") }))
	defer svc.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "undeclared service") }))
	defer other.Close()
	host := strings.TrimPrefix(svc.URL, "http://")

	c := newCLI(t)
	dir := filepath.Join(c.home, "tools", "fetcher")
	_ = os.MkdirAll(dir, 0o755)
	_ = os.WriteFile(filepath.Join(dir, "package.json"), []byte(fmt.Sprintf(`{"name":"fetcher","version":"1.0.0","type":"module","jean2":{"permissions":{"network":[%q]}}}`, host)), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "tool.js"), []byte(fetcher), 0o644)

	out, stderr, code := c.run("", "tools", "list")
	if code != 0 || !strings.Contains(out, "connect to "+host) || !strings.Contains(out, "needs approval") {
		t.Fatalf("list: exit %d\n%s\n%s", code, out, stderr)
	}
	out, stderr, code = c.run("", "tools", "approve", "fetcher", "--yes")
	if code != 0 || !strings.Contains(out, "connect  "+host) {
		t.Fatalf("approve: exit %d\n%s\n%s", code, out, stderr)
	}
	out, stderr, code = c.run("", "tools", "run", "fetcher", "--input", fmt.Sprintf(`{"url":%q}`, svc.URL+"/"))
	if code != 0 || !strings.Contains(out, "declared service") {
		t.Fatalf("run with the declared host: exit %d\n%s\n%s", code, out, stderr)
	}
	out, stderr, code = c.run("", "tools", "run", "fetcher", "--input", fmt.Sprintf(`{"url":%q}`, other.URL+"/"))
	if strings.Contains(out, "undeclared service") || !strings.Contains(out, "refused: tool fetcher does not declare it") || !strings.Contains(out, "jean2 tools approve fetcher") {
		t.Fatalf("run with an undeclared host: exit %d\n%s\n%s", code, out, stderr)
	}
}

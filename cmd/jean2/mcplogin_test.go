package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/mcpclient/oauthtest"
)

// jean2 mcp login NAME signs in to a hosted server of mcp.json (curl plays the browser that
// follows the authorization server's redirect to the loopback listener); the other commands
// then use the kept token (tools list shows and runs the server's tool); logout forgets it,
// and the server is listed as needing a sign-in, with the command that gives one.
func TestMCPLoginLogout(t *testing.T) {
	if _, err := os.Stat("/usr/bin/curl"); err != nil {
		t.Skip("curl is not installed (it plays the browser of the sign-in)")
	}
	as := oauthtest.NewAuthServer(t, time.Hour)
	url := oauthtest.ProtectedServer(t, as)
	c := newCLI(t)
	if err := os.WriteFile(filepath.Join(c.home, "mcp.json"), []byte(fmt.Sprintf(`{"mcpServers": {"hosted": {"url": %q}}}`, url)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := c.run("", "tools", "list")
	if code != 0 || !strings.Contains(out, "needs you to sign in: run jean2 mcp login hosted") {
		t.Fatalf("before login: exit %d\n%s\n%s", code, out, stderr)
	}
	out, stderr, code = c.run("", "mcp", "login", "hosted", "--browser", "curl -s -L -o /dev/null")
	if code != 0 || !strings.Contains(out, "Signed in to hosted") || !strings.Contains(stderr, "sign in at:") {
		t.Fatalf("login: exit %d\n%s\n%s", code, out, stderr)
	}
	out, stderr, code = c.run("", "tools", "run", "mcp__hosted__hello", "--input", "{}")
	if code != 0 || !strings.Contains(out, "hi") {
		t.Fatalf("the hosted tool after login: exit %d\n%s\n%s", code, out, stderr)
	}
	if _, _, code := c.run("", "mcp", "login", "nope"); code == 0 {
		t.Fatal("login to a server that is not in mcp.json succeeded")
	}
	out, _, code = c.run("", "mcp", "logout", "hosted")
	if code != 0 || !strings.Contains(out, "Signed out of hosted") {
		t.Fatalf("logout: exit %d %s", code, out)
	}
	out, _, _ = c.run("", "tools", "list")
	if !strings.Contains(out, "jean2 mcp login hosted") {
		t.Fatalf("after logout:\n%s", out)
	}
}

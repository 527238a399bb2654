package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/jean2/jean2/builtin"
	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/sandbox"
	"github.com/jean2/jean2/server"
)

// termText is what the terminal shows, its rows joined.
const termText = `(document.querySelector("#terminal .xterm-rows")?.textContent || "")`

// The terminal tab: a person types a command in the page and sees its output from the
// shell on the server (confined: a write outside the workspace fails); after a reload the
// page shows the scrollback again and the same shell answers.
func TestTerminalTab(t *testing.T) {
	if st := sandbox.Probe(sandbox.ModeRequire, os.Args[0]); st.LandlockABI < 1 || !st.NetNS {
		t.Skipf("needs Landlock and network namespaces: %+v", st)
	}
	f := newFixtureWith(t, func(f *fixture, cfg *server.Config) {
		sb := host.SandboxOptions{Mode: sandbox.ModeRequire, Launcher: os.Args[0]}
		cfg.Host.Sandbox = sb
		cfg.Host.Builtins = builtin.Tools(builtin.Options{Shell: builtin.ShellOptions{Sandbox: sb, Layout: cfg.Host.Layout,
			Environ: []string{"PATH=/usr/bin:/bin", "SHELL=/bin/bash"}}})
	})
	s := f.session("terminal")
	f.open("#/")
	// The workspace's terminal link in the menu opens the tab.
	f.click(`a.term-link[href="#/w/` + s.WorkspaceID + `/terminal"]`)
	f.waitJS("the terminal drawn", `document.querySelector("#terminal .xterm-helper-textarea") !== null`)
	f.waitJS("the shell's prompt", termText+`.includes("$") || `+termText+`.includes("#")`)

	typeInTerminal(f, "echo typed-$((6*7)) pid-$$; printf '\\033[31mred-%s\\033[0m\\n' $((2+3))\n")
	f.waitJS("the command's output", termText+`.includes("typed-42")`)
	pid := f.eval(`(` + termText + `.match(/typed-42 pid-(\d+)/) || [])[1] || ""`)
	if pid == "" {
		t.Fatalf("no pid in the output: %s", f.eval(termText))
	}
	// xterm.js's theme reached the page through constructed style sheets (the CSP refuses
	// <style> elements): the red of the 16 colours is drawn red.
	f.waitJS("red output", `[...document.querySelectorAll("#terminal .xterm-rows span")].some((s) => s.textContent.includes("red-5") && getComputedStyle(s).color !== getComputedStyle(document.querySelector("#terminal .xterm-rows")).color)`)

	typeInTerminal(f, "echo out > /etc/jean2-terminal-test || echo refused-$((5+6))\n")
	f.waitJS("the write outside the workspace refused", termText+`.includes("refused-11")`)
	if _, err := os.Stat("/etc/jean2-terminal-test"); err == nil {
		os.Remove("/etc/jean2-terminal-test")
		t.Fatal("the terminal wrote /etc")
	}

	// A reload: the scrollback comes back, and the same shell answers.
	if err := f.b.Do(30*time.Second, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	f.eval(`(() => { window.__csp = []; document.addEventListener("securitypolicyviolation", (e) => window.__csp.push(e.violatedDirective + " " + (e.blockedURI || "inline"))); return ""; })()`)
	f.waitJS("the scrollback after the reload", termText+`.includes("typed-42 pid-`+pid+`")`)
	typeInTerminal(f, "echo again-$((1+1)) pid-$$\n")
	f.waitJS("the same shell after the reload", termText+`.includes("again-2 pid-`+pid+`")`)

	// Close terminal ends the shell on the server.
	f.click("#close-terminal")
	f.waitGo("the terminal closed on the server", func() bool {
		var list struct{ Terminals []struct{ ID string } }
		f.api("GET", "/api/workspaces/"+s.WorkspaceID+"/terminals", nil, &list)
		return len(list.Terminals) == 0
	})
	f.waitText(".term-status", "No terminal open")
}

// typeInTerminal types a line in the terminal: the text as a keyboard's input method
// inserts it, then Enter. (chromedp.SendKeys gives each character as both a key press and
// a char event, which xterm.js takes as two.)
func typeInTerminal(f *fixture, line string) {
	f.t.Helper()
	text, enter := strings.CutSuffix(line, "\n")
	err := f.b.Do(20*time.Second, chromedp.Focus("#terminal .xterm-helper-textarea"),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, input.InsertText, input.InsertTextParams{Text: text})
			return err
		}))
	if err == nil && enter {
		err = f.b.Do(20*time.Second, chromedp.KeyEvent(kb.Enter))
	}
	if err != nil {
		f.t.Fatalf("type %q in the terminal: %v", line, err)
	}
}

// A command in the terminal tries a host: the bar above the terminal asks, Allow (a real
// click) lets the connection through, the bar goes, and the same host is not asked again.
func TestTerminalNetworkBar(t *testing.T) {
	if st := sandbox.Probe(sandbox.ModeRequire, os.Args[0]); st.LandlockABI < 1 || !st.NetNS {
		t.Skipf("needs Landlock and network namespaces: %+v", st)
	}
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprintln(w, "reached-the-loopback-service")
	}))
	t.Cleanup(srv.Close)
	target := strings.TrimPrefix(srv.URL, "http://")
	f := newFixtureWith(t, func(f *fixture, cfg *server.Config) {
		sb := host.SandboxOptions{Mode: sandbox.ModeRequire, Launcher: os.Args[0]}
		cfg.Host.Sandbox = sb
		cfg.Host.Builtins = builtin.Tools(builtin.Options{Shell: builtin.ShellOptions{Sandbox: sb, Layout: cfg.Host.Layout,
			Environ: []string{"PATH=/usr/bin:/bin", "SHELL=/bin/bash"}}})
	})
	s := f.session("terminal")
	f.open("#/w/" + s.WorkspaceID + "/terminal")
	f.waitJS("the shell's prompt", termText+`.includes("$") || `+termText+`.includes("#")`)

	typeInTerminal(f, "curl -sS -m 100 "+srv.URL+"/; echo curl-$((40+2))\n")
	bar := `.term-ask[data-target=` + jsString(target) + `]`
	f.waitText(bar, "This terminal wants to reach "+target)
	if role := f.eval(`document.querySelector(` + jsString(bar) + `).getAttribute("role") + " " + document.querySelector(".term-asks").getAttribute("aria-live")`); role != "group polite" {
		t.Fatalf("the bar's role and live region: %q", role)
	}
	if src := axeSourceOrEmpty(); src != "" {
		f.axeCheckOf(src, "the network bar", `document.querySelector(".term-asks")`)
	}
	f.click(bar + ` button[data-answer="allow"]`)
	f.waitJS("the command reached the service", termText+`.includes("curl-42") && `+termText+`.includes("reached-the-loopback-service")`)
	f.waitJS("the bar hidden", `document.querySelector(".term-ask") === null`)

	// Allowed for the terminal's life: the next connection goes through unasked.
	typeInTerminal(f, "curl -sS -m 100 "+srv.URL+"/again; echo curl-$((50+2))\n")
	f.waitJS("the second request", termText+`.includes("curl-52")`)
	if n, asked := hits.Load(), f.eval(`String(document.querySelectorAll(".term-ask").length)`); n != 2 || asked != "0" {
		t.Fatalf("requests %d (want 2), questions shown %s (want 0)", n, asked)
	}
}

// axeSourceOrEmpty is axe-core's source, or "" where it is not installed.
func axeSourceOrEmpty() string {
	p := os.Getenv("JEAN2_AXE")
	if p == "" {
		p = "../../.deps/node_modules/axe-core/axe.min.js"
	}
	src, _ := os.ReadFile(p)
	return string(src)
}

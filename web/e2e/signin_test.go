package e2e_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// shot saves a screenshot of the page to $JEAN2_E2E_SHOTS/name.png when that is set (to look
// at what a person sees); otherwise it does nothing.
func (f *fixture) shot(name string) {
	f.t.Helper()
	dir := os.Getenv("JEAN2_E2E_SHOTS")
	if dir == "" {
		return
	}
	ctx := f.b.Ctx
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		f.t.Errorf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		f.t.Error(err)
	}
}

// TestSignIn: a browser without the server's cookie gets a page saying how to sign in; a
// used sign-in address says so; a fresh one signs in, and the page cannot read the token.
func TestSignIn(t *testing.T) {
	f := newFixture(t)
	if err := f.b.Do(30*time.Second, chromedp.Navigate(f.ts.URL+"/")); err != nil {
		t.Fatal(err)
	}
	f.waitText("h1", "Sign in to jean2")
	f.waitText(".signin", "jean2 signin")
	f.shot("signin")
	if f.eval(`document.querySelector(".topbar") ? "frame" : ""`) != "" {
		t.Error("the app's frame is drawn for a browser that is not signed in")
	}

	// A sign-in address that was used already (here by another client) says so.
	used, err := f.srv.SignInURL(f.ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Get(used)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := f.b.Do(30*time.Second, chromedp.Navigate(used)); err != nil {
		t.Fatal(err)
	}
	f.waitText(".signin .error", "used already")
	f.shot("signin-used")

	f.signIn()
	f.open("#/")
	if c := f.eval(`document.cookie`); strings.Contains(c, "jean2_") {
		t.Errorf("the page's script can read the token: %q", c)
	}
	if strings.Contains(f.eval(`location.href`), "code=") {
		t.Errorf("the sign-in code stays in the address bar: %s", f.eval(`location.href`))
	}
}

// TestProviderKeyMoveNeedsConfirmation: moving a provider with a stored key to another
// address asks the person first; cancelled, nothing changes; confirmed, it is saved.
func TestProviderKeyMoveNeedsConfirmation(t *testing.T) {
	f := newFixture(t)
	put := map[string]any{"providers": []map[string]any{{"name": "local", "kind": "openai", "baseUrl": "http://127.0.0.1:9/v1", "apiKey": "sk-local-secret", "model": "m"}}}
	if code := f.api("PUT", "/api/providers", put, nil); code != 200 {
		t.Fatalf("PUT providers: %d", code)
	}
	base := func() string {
		var view struct {
			Providers []struct{ Name, BaseURL string }
		}
		f.api("GET", "/api/providers", nil, &view)
		for _, p := range view.Providers {
			if p.Name == "local" {
				return p.BaseURL
			}
		}
		return ""
	}
	f.open("#/settings")
	for _, confirm := range []bool{false, true} {
		f.waitText(`.providers tr[data-provider="local"]`, "key set")
		f.click(`.providers tr[data-provider="local"] button`)
		// The open dialog's field: a closed dialog stays in the page until its close event (a
		// task after close()), and the last round's field, first in the page, has the same id.
		f.eval(`(() => { document.querySelector("dialog[open] #prov-base").value = ""; return ""; })()`)
		f.typeInto("#prov-base", "http://127.0.0.1:10/v1")
		f.click("dialog[open] button.primary")
		// The confirmation opens over the provider's dialog.
		f.waitText("dialog[open]:last-of-type", "Send an API key to a new address?")
		f.waitText("dialog[open]:last-of-type", "http://127.0.0.1:10/v1")
		if !confirm {
			f.shot("provider-confirm")
			f.clickText("dialog[open]:last-of-type", "Cancel")
			f.waitText("dialog[open] .error", "Not saved")
			if got := base(); got != "http://127.0.0.1:9/v1" {
				t.Errorf("after Cancel the server's base URL is %q", got)
			}
			f.clickText("dialog[open]", "Cancel")
			f.waitJS("the provider's dialog closed", `document.querySelector("dialog") === null`)
			continue
		}
		f.clickText("dialog[open]:last-of-type", "Send the key there")
		f.waitText("#notices", "Providers saved")
		if got := base(); got != "http://127.0.0.1:10/v1" {
			t.Errorf("after confirming the server's base URL is %q", got)
		}
	}
}

// TestWorkspaceWarnings: a workspace on a credential folder is refused with the server's
// reason in the dialog; one that holds the home folder is made, and its warning stays on
// the page until dismissed.
func TestWorkspaceWarnings(t *testing.T) {
	f := newFixture(t)
	home := filepath.Dir(f.ws) // the fixture's UserHome
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	f.open("#/")
	f.click("#new-workspace")
	f.typeInto("#ws-path", filepath.Join(home, ".ssh")+"\n")
	f.waitText("dialog[open] .error", "tools must never reach")
	f.eval(`(() => { document.querySelector("#ws-path").value = ""; return ""; })()`)
	f.typeInto("#ws-path", home+"\n")
	f.waitText("#notices .notice.error", "is your home folder")
	f.shot("workspace-warning")
}

// attackerPage is a page served on another loopback port, as a tool that listens there
// could serve it to a person ("open http://127.0.0.1:…/ to see the report"). It is
// same-site with the server, so the browser sends it the sign-in cookie; it tries to read
// the API, change it, and open the server log's WebSocket.
const attackerPage = `<!doctype html><title>report</title><script>
const api = API;
const out = {};
Promise.all([
  fetch(api + "/api/settings", { mode: "no-cors", credentials: "include" }).then((r) => { out.get = r.type; }, () => { out.get = "error"; }),
  fetch(api + "/api/workspaces", { method: "POST", mode: "no-cors", credentials: "include", headers: { "Content-Type": "text/plain" }, body: JSON.stringify({ path: WS }) }).then((r) => { out.post = r.type; }, () => { out.post = "error"; }),
  new Promise((res) => { const ws = new WebSocket(api.replace("http", "ws") + "/api/ws"); ws.onopen = () => { out.ws = "open"; res(); }; ws.onerror = () => { out.ws = "refused"; res(); }; }),
]).then(() => { document.title = "done " + JSON.stringify(out); });
</script>`

// TestSameSitePageOnAnotherPort: the signed-in browser opens a page of another port on
// 127.0.0.1. Its requests reach the server with the cookie (same site), and the server
// answers none of them: not a read, not a change, not a socket.
func TestSameSitePageOnAnotherPort(t *testing.T) {
	f := newFixture(t)
	f.open("#/")
	f.otherSite = true
	page := strings.NewReplacer("API", jsString(f.ts.URL), "WS", jsString(f.ws)).Replace(attackerPage)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, page)
	}))
	defer evil.Close()
	if err := f.b.Do(30*time.Second, chromedp.Navigate(evil.URL)); err != nil {
		t.Fatal(err)
	}
	f.waitJS("the attacker's page to finish", `document.title.startsWith("done")`)
	t.Logf("the page saw: %s", f.eval(`document.title`))
	var tried int
	for _, r := range f.seen.get() {
		if r.Origin != evil.URL && r.SecFetchSite != "same-site" {
			continue
		}
		tried++
		t.Logf("from the other port: %s, Sec-Fetch-Site %q, Origin %q, cookie %v → %d", r.Path, r.SecFetchSite, r.Origin, r.Cookie, r.Status)
		if !r.Cookie {
			t.Errorf("%s came without the cookie: the test does not show what it means to", r.Path)
		}
		if r.Status < 400 {
			t.Errorf("the server answered %s from another port with %d", r.Path, r.Status)
		}
	}
	if tried < 3 {
		t.Errorf("only %d of the page's 3 requests reached the server: %+v", tried, f.seen.get())
	}
	var list struct{ Workspaces []struct{ Path string } }
	f.api("GET", "/api/workspaces", nil, &list)
	if len(list.Workspaces) != 0 {
		t.Errorf("the page made a workspace: %+v", list.Workspaces)
	}
}

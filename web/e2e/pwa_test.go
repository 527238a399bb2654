package e2e_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/serviceworker"
	"github.com/chromedp/chromedp"

	"github.com/jean2/jean2/web/internal/browsertest"
)

// cdpCall sends one DevTools command to the page's target.
func cdpCall[P, R any](f *fixture, c cdp.Command[P, R], params P) R {
	f.t.Helper()
	var out R
	err := f.b.Do(30*time.Second, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		var err error
		out, err = cdp.Call(ctx, tg, c, params)
		return err
	}))
	if err != nil {
		f.t.Fatalf("%s: %v", c.Method, err)
	}
	return out
}

// waitWorker waits until the service worker controls the page.
func (f *fixture) waitWorker() {
	f.t.Helper()
	f.waitJS("the service worker to control the page", `navigator.serviceWorker.controller !== null && navigator.serviceWorker.controller.scriptURL.endsWith("/sw.js")`)
}

// cachedURLs lists every URL in the page's caches, by cache name.
func (f *fixture) cachedURLs() map[string][]string {
	f.t.Helper()
	raw := f.eval(`(async () => {
  const out = {};
  for (const name of await caches.keys()) out[name] = (await (await caches.open(name)).keys()).map((r) => new URL(r.url).pathname);
  return JSON.stringify(out);
})()`)
	var out map[string][]string
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		f.t.Fatalf("caches %s: %v", raw, err)
	}
	return out
}

// TestInstallableApp: the service worker registers and controls the page, Chromium finds
// the manifest valid and the app installable, the shell of this build is cached and the
// API never is: a session renamed behind the page's back shows its new name after a
// reload.
func TestInstallableApp(t *testing.T) {
	f := newFixture(t)
	s := f.session("Before the rename")
	f.open("#/s/" + s.ID)
	f.waitWorker()

	manifest := cdpCall(f, page.GetAppManifest, page.GetAppManifestParams{})
	if len(manifest.Errors) > 0 || manifest.Manifest == nil {
		t.Fatalf("the manifest %s: errors %+v", manifest.URL, manifest.Errors)
	}
	if errs := cdpCall(f, page.GetInstallabilityErrors, cdp.Empty{}).InstallabilityErrors; len(errs) > 0 {
		var ids []string
		for _, e := range errs {
			ids = append(ids, e.ErrorID)
		}
		t.Fatalf("Chromium says the app is not installable: %s", strings.Join(ids, ", "))
	}

	caches := f.cachedURLs()
	if len(caches) != 1 {
		t.Fatalf("caches %v: want one, this build's", caches)
	}
	for name, urls := range caches {
		if !strings.HasPrefix(name, "jean2-shell-") {
			t.Errorf("cache %q: want jean2-shell-<version>", name)
		}
		version := strings.TrimPrefix(name, "jean2-shell-")
		joined := strings.Join(urls, " ")
		for _, want := range []string{"/a/" + version + "/js/main.js", "/a/" + version + "/app.css", "/offline.html", "/icons/icon-192.png", "/manifest.webmanifest"} {
			if !strings.Contains(joined, want) {
				t.Errorf("the shell cache lacks %s: %s", want, joined)
			}
		}
	}

	// The API answers from the server, never from a cache. A reload first, so the page's
	// every request passes through the worker (the first load was not controlled yet).
	if err := f.b.Do(20*time.Second, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	f.waitWorker()
	f.waitText("#sidebar", "Before the rename")
	f.api("PATCH", "/api/sessions/"+s.ID, map[string]any{"title": "After the rename"}, nil)
	if err := f.b.Do(20*time.Second, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	f.waitWorker()
	f.waitText("#sidebar", "After the rename")
	for name, urls := range f.cachedURLs() {
		for _, u := range urls {
			if strings.HasPrefix(u, "/api/") || u == "/auth" {
				t.Errorf("cache %s holds %s", name, u)
			}
		}
	}
}

// TestOfflinePage: with the server stopped, a reload shows the offline page, which says the
// server is not reachable and retries by itself; once the server answers again on the same
// address, the page opens jean2.
func TestOfflinePage(t *testing.T) {
	f := newFixture(t)
	s := f.session("offline")
	f.open("#/s/" + s.ID)
	f.waitWorker()

	addr := f.ts.Listener.Addr().String()
	f.ts.Close()
	if err := f.b.Do(20*time.Second, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	f.waitText("h1", "The jean2 server is not reachable")
	f.waitText("#status", "Not reachable. Trying again in")

	// The server is back on the same address.
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen again on %s: %v", addr, err)
	}
	back := &httptest.Server{Listener: l, Config: &http.Server{Handler: f.seen.wrap(f.srv.Handler())}}
	back.Start()
	f.ts = back
	// The offline page reloads itself: a check that meets the navigation is made again.
	f.waitGo("jean2 again, opened by the offline page", func() bool {
		ok, err := browsertest.Eval[bool](f.b, 5*time.Second, `document.querySelector(".session-view") !== null && location.hash === "#/s/`+s.ID+`"`)
		return err == nil && ok
	})
}

// TestPushShownByTheWorker: a push message delivered to the service worker (as a push
// service would) is shown as a notification naming the session, with its kind in words,
// that opens the session; Settings offers to turn notifications on.
func TestPushShownByTheWorker(t *testing.T) {
	f := newFixture(t)
	s := f.session("Deploy the docs")
	regs := make(chan serviceworker.RegistrationID, 8)
	err := chromedp.Listen(f.b.Ctx, func(ev any) {
		if e, ok := ev.(*serviceworker.EventWorkerRegistrationUpdated); ok {
			for _, r := range e.Registrations {
				if !r.IsDeleted && strings.HasPrefix(r.ScopeURL, f.ts.URL) {
					select {
					case regs <- r.RegistrationID:
					default:
					}
				}
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	cdpCall(f, serviceworker.Enable, cdp.Empty{})
	f.open("")
	f.waitWorker()
	cdpCall(f, browser.SetPermission, browser.SetPermissionParams{
		Permission: &browser.PermissionDescriptor{Name: "notifications"}, Setting: browser.PermissionSettingGranted, Origin: f.ts.URL})
	var reg serviceworker.RegistrationID
	select {
	case reg = <-regs:
	case <-time.After(30 * time.Second):
		t.Fatal("DevTools named no service worker registration")
	}
	data, _ := json.Marshal(map[string]string{"sessionId": s.ID, "workspaceId": s.WorkspaceID, "kind": "ask", "title": "Deploy the docs", "url": "/#/s/" + s.ID})
	cdpCall(f, serviceworker.DeliverPushMessage, serviceworker.DeliverPushMessageParams{Origin: f.ts.URL, RegistrationID: reg, Data: string(data)})
	var got string
	f.waitGo("the notification", func() bool {
		got = f.eval(`(async () => JSON.stringify((await (await navigator.serviceWorker.ready).getNotifications()).map((n) => ({ title: n.title, body: n.body, url: n.data && n.data.url, tag: n.tag }))))()`)
		return got != "[]"
	})
	type shown struct{ Title, Body, URL, Tag string }
	var list []shown
	_ = json.Unmarshal([]byte(got), &list)
	want := shown{Title: "Deploy the docs", Body: "A question is waiting for your answer.", URL: "/#/s/" + s.ID, Tag: "jean2-session-" + s.ID}
	if len(list) != 1 || list[0] != want {
		t.Fatalf("notification %s, want %s", got, want)
	}

	f.open("#/settings")
	f.waitText(".notifications-box", "Notifications are off for this browser.")
	f.waitText(".notifications-box button", "Turn on notifications")
}

// fakePushService replaces the page's PushManager with one that answers at once, as a
// browser's push service would: headless Chromium here has none to reach (its subscribe
// never settles). The subscription has a real P-256 key and secret, which the server
// checks.
const fakePushService = `(async () => {
  const pair = await crypto.subtle.generateKey({ name: "ECDH", namedCurve: "P-256" }, true, ["deriveBits"]);
  const raw = new Uint8Array(await crypto.subtle.exportKey("raw", pair.publicKey));
  const b64 = (bytes) => btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  let current = null;
  const sub = {
    endpoint: "https://push.example/send/abc123",
    options: { applicationServerKey: null },
    toJSON() { return { endpoint: this.endpoint, expirationTime: null, keys: { p256dh: b64(raw), auth: b64(crypto.getRandomValues(new Uint8Array(16))) } }; },
    async unsubscribe() { current = null; return true; },
  };
  PushManager.prototype.subscribe = async function (opts) {
    window.__subscribedWith = opts.applicationServerKey.byteLength;
    current = sub;
    return sub;
  };
  PushManager.prototype.getSubscription = async function () { return current; };
  return "";
})()`

// TestNotificationsTurnedOnAndOff: Settings → Notifications asks the browser's permission,
// subscribes with the server's 65-byte key and registers the subscription with the server;
// turning them off removes it there.
func TestNotificationsTurnedOnAndOff(t *testing.T) {
	f := newFixture(t)
	f.open("#/settings")
	f.waitWorker()
	cdpCall(f, browser.SetPermission, browser.SetPermissionParams{
		Permission: &browser.PermissionDescriptor{Name: "notifications"}, Setting: browser.PermissionSettingGranted, Origin: f.ts.URL})
	f.eval(fakePushService)
	type listed struct{ Subscriptions []struct{ Endpoint string } }
	var list listed
	f.clickText(".notifications-box", "Turn on notifications")
	f.waitText(".notifications-box", "Notifications are on for this browser.")
	f.api("GET", "/api/push/subscriptions", nil, &list)
	if len(list.Subscriptions) != 1 || list.Subscriptions[0].Endpoint != "https://push.example/send/abc123" {
		t.Fatalf("the server's subscriptions after turning on: %+v", list.Subscriptions)
	}
	if got := f.eval(`String(window.__subscribedWith)`); got != "65" {
		t.Errorf("subscribed with a key of %s bytes, want the server's 65", got)
	}
	f.clickText(".notifications-box", "Turn off notifications")
	f.waitText(".notifications-box", "Notifications are off for this browser.")
	list = listed{}
	f.api("GET", "/api/push/subscriptions", nil, &list)
	if len(list.Subscriptions) != 0 {
		t.Fatalf("the server's subscriptions after turning off: %+v", list.Subscriptions)
	}
}

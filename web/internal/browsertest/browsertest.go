// Package browsertest runs the web client's tests in a real headless Chromium (Debian's
// chromium package, which scripts/setup installs) through the DevTools protocol (chromedp).
// Test support only: nothing in jean2 itself imports it.
package browsertest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// DefaultPath is where Debian's chromium package puts the browser.
const DefaultPath = "/usr/bin/chromium"

// Path returns the browser to run: $JEAN2_CHROMIUM when set, else DefaultPath.
func Path() string {
	if p := os.Getenv("JEAN2_CHROMIUM"); p != "" {
		return p
	}
	return DefaultPath
}

// Browser is one headless Chromium with a fresh profile, and what its pages reported:
// uncaught script errors, console errors, and every URL they requested.
type Browser struct {
	Ctx context.Context

	mu       sync.Mutex
	errs     []string
	requests []string
}

// New starts a browser for t and stops it when t ends. It skips t, saying why and how to
// fix it, only when the browser is not installed.
func New(t testing.TB) *Browser {
	t.Helper()
	path := Path()
	if info, err := os.Stat(path); err != nil || info.IsDir() {
		t.Skipf("browser tests need Chromium at %s (not found: %v). Run ./scripts/setup, which installs Debian's chromium package, or set JEAN2_CHROMIUM", path, err)
	}
	// A browser that crashes while starting (seen now and then on a loaded machine) is
	// started again with a fresh profile; three failures in a row fail the test.
	var (
		b                      *Browser
		cancelCtx, cancelAlloc context.CancelFunc
		err                    error
	)
	for attempt := 1; attempt <= 3; attempt++ {
		b, cancelCtx, cancelAlloc, err = start(path, t.TempDir(), t.TempDir())
		if err == nil {
			break
		}
		t.Logf("starting Chromium, attempt %d: %v", attempt, err)
	}
	if err != nil {
		t.Fatalf("start Chromium at %s: %v", path, err)
	}
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
	})
	return b
}

// start starts Chromium with the profile folder profile and its temporary files in tmp:
// with disable-dev-shm-usage its shared memory is files there, which a killed browser
// leaves (in /tmp, dozens per run before); the test's folder goes with the test.
func start(path, profile, tmp string) (*Browser, context.CancelFunc, context.CancelFunc, error) {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1200, 900),
		chromedp.Flag("no-sandbox", true), // tests run as root in containers, where Chromium's sandbox cannot start
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-breakpad", true),
		chromedp.Flag("mute-audio", true),
		chromedp.Env("TMPDIR=" + tmp),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	b := &Browser{}
	ctx, cancelCtx := chromedp.NewContext(allocCtx, chromedp.WithListener(b.listen))
	b.Ctx = ctx
	// The first Do starts the browser and binds its life to ctx (not to a deadline), so a
	// watchdog cancels a start that hangs instead.
	watchdog := time.AfterFunc(60*time.Second, cancelCtx)
	err := chromedp.Do(ctx)
	watchdog.Stop()
	if err != nil {
		cancelCtx()
		cancelAlloc()
		return nil, nil, nil, err
	}
	return b, cancelCtx, cancelAlloc, nil
}

func (b *Browser) listen(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch e := ev.(type) {
	case *runtime.EventExceptionThrown:
		msg := e.ExceptionDetails.Text
		if e.ExceptionDetails.Exception != nil && e.ExceptionDetails.Exception.Description != "" {
			msg = e.ExceptionDetails.Exception.Description
		}
		b.errs = append(b.errs, "uncaught: "+msg)
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError {
			var parts []string
			for _, a := range e.Args {
				if a.Description != "" {
					parts = append(parts, a.Description)
				} else {
					parts = append(parts, strings.Trim(string(a.Value), `"`))
				}
			}
			b.errs = append(b.errs, "console.error: "+strings.Join(parts, " "))
		}
	case *network.EventRequestWillBeSent:
		b.requests = append(b.requests, e.Request.URL)
	case *network.EventWebSocketCreated:
		b.requests = append(b.requests, e.URL)
	}
}

// Errors returns the script errors the pages reported so far.
func (b *Browser) Errors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errs...)
}

// Requests returns every URL the pages requested so far (HTTP and WebSocket).
func (b *Browser) Requests() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.requests...)
}

// CheckLocal reports requests that left the origin base (data: URLs are local).
func (b *Browser) CheckLocal(base string) error {
	u, err := url.Parse(base)
	if err != nil {
		return err
	}
	var bad []string
	for _, r := range b.Requests() {
		ru, err := url.Parse(r)
		if err != nil {
			bad = append(bad, r)
			continue
		}
		if ru.Scheme == "data" || ru.Scheme == "blob" {
			continue
		}
		if ru.Host != u.Host {
			bad = append(bad, r)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("requests left %s: %s", u.Host, strings.Join(bad, ", "))
	}
	return nil
}

// Do runs actions with a deadline, so a page that never shows what a test waits for fails
// the test with the action's error instead of hanging it.
func (b *Browser) Do(timeout time.Duration, actions ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(b.Ctx, timeout)
	defer cancel()
	err := chromedp.Do(ctx, actions...)
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("timed out after %s (script errors so far: %v)", timeout, b.Errors())
	}
	return err
}

// Eval evaluates a script expression in the page (awaiting a promise) and decodes its value.
func Eval[T any](b *Browser, timeout time.Duration, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(b.Ctx, timeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAsValue, chromedp.EvalAwaitPromise))
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("evaluating %.80q timed out after %s (script errors so far: %v)", expr, timeout, b.Errors())
	}
	return v, err
}

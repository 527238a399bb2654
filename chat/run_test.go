package chat

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/server"
	"github.com/jean2/jean2/tool"
)

// testServer is a real jean2 server (SQLite, the harness, the hub) on a temporary home,
// with the fake OpenAI server as its provider and the given built-in tools.
func testServer(t *testing.T, builtins ...tool.Tool) (*server.Server, string, *providertest.Server) {
	t.Helper()
	return testServerOn(t, "", builtins...)
}

// testServerOn is testServer on the database at databaseURL ("" for SQLite in its home).
func testServerOn(t *testing.T, databaseURL string, builtins ...tool.Tool) (*server.Server, string, *providertest.Server) {
	t.Helper()
	return testServerWith(t, databaseURL, nil, builtins...)
}

// testServerWith is testServerOn with tool folders in its home first: folder name → tool.js.
func testServerWith(t *testing.T, databaseURL string, folders map[string]string, builtins ...tool.Tool) (*server.Server, string, *providertest.Server) {
	t.Helper()
	home := t.TempDir()
	layout, err := host.LayoutFromEnv(func(k string) string {
		if k == "JEAN2_HOME" {
			return home
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := layout.Ensure(); err != nil {
		t.Fatal(err)
	}
	for name, src := range folders {
		if err := os.MkdirAll(filepath.Join(layout.Tools, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(layout.Tools, name, "tool.js"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fake := providertest.NewOpenAI(t)
	env := map[string]string{"OPENAI_API_KEY": fake.Key, "OPENAI_BASE_URL": fake.BaseURL(), "OPENAI_MODEL": "test-model"}
	srv, err := server.Open(context.Background(), server.Config{
		Host:            host.Options{Layout: layout, Builtins: builtins},
		Getenv:          func(k string) string { return env[k] },
		DatabaseURL:     databaseURL,
		ProviderOptions: &provider.Options{Retry: provider.Retry{MaxAttempts: 1}},
		Logger:          slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
		ts.Close()
	})
	// The turns here script every model request: no naming of sessions by the model.
	if err := NewClient(ts.URL, srv.Token()).Call(context.Background(), "PATCH", "/api/settings", map[string]any{"autoTitle": false}, nil); err != nil {
		t.Fatal(err)
	}
	return srv, ts.URL, fake
}

// screen is what the chat wrote, read while it runs.
type screen struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *screen) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(s.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %q; the screen:\n%s", want, s.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitForAfter waits for want to show after the first from bytes of the screen.
func (s *screen) waitForAfter(t *testing.T, from int, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(s.String()[from:], want) {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %q after byte %d; the screen:\n%s", want, from, s.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Run in the process, as another program would embed the chat: a turn against a real
// server streams its answer, /quit leaves, and the session is there to go on with.
func TestRunTurnThenQuit(t *testing.T) {
	srv, base, fake := testServer(t)
	fake.Push(providertest.OpenAIText("test-model", "Hello ", "from the model."))
	ws := t.TempDir()
	in, typed := io.Pipe()
	var out screen
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Options{Server: base, Token: srv.Token(), Workspace: ws, Stdin: in, Stdout: &out})
	}()
	out.waitFor(t, "Type a message.")
	if _, err := io.WriteString(typed, "say hello\n"); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "Hello from the model.")
	out.waitFor(t, "── done")
	if _, err := io.WriteString(typed, "/quit\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("Run did not return after /quit; the screen:\n%s", out.String())
	}
	got := out.String()
	if !strings.Contains(got, "Bye. jean2 chat --session ses_") || strings.Contains(got, "\x1b") {
		t.Errorf("no farewell naming the session, or colour without Color:\n%q", got)
	}

	// Going on with that session from another folder is a mistake of the options.
	id := got[strings.LastIndex(got, "--session ")+len("--session "):]
	id = strings.Fields(id)[0]
	other := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	err := Run(context.Background(), Options{Server: base, Token: srv.Token(), Workspace: other, Session: id, Stdin: strings.NewReader(""), Stdout: io.Discard})
	var ue UsageError
	if !errors.As(err, &ue) || !strings.Contains(ue.Msg, "belongs to the workspace "+ws) {
		t.Errorf("a session of another workspace: %v (%T), want a UsageError naming %s", err, err, ws)
	}
}

// With no server at the address: the error says so and how to start one; the chat starts
// its own only when allowed to and only for a loopback address.
func TestRunWithoutServer(t *testing.T) {
	ln := httptest.NewServer(nil)
	dead := ln.URL
	ln.Close() // nothing answers there now
	o := Options{Server: dead, Workspace: t.TempDir(), Stdin: strings.NewReader(""), Stdout: io.Discard}
	err := Run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "no jean2 server answers at "+dead) || !strings.Contains(err.Error(), "jean2 serve") {
		t.Errorf("no server, none to start: %v", err)
	}
	started := 0
	o.StartServer = func(context.Context) (*LocalServer, error) {
		started++
		return nil, errors.New("no room here")
	}
	err = Run(context.Background(), o)
	if started != 1 || err == nil || !strings.Contains(err.Error(), "starting one here failed: no room here") {
		t.Errorf("started %d times; %v", started, err)
	}
	o.Server = "http://192.0.2.1:1" // not loopback: never started here
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := Run(ctx, o); started != 1 || err == nil {
		t.Errorf("a remote address: started %d times; %v", started, err)
	}
	if err := Run(context.Background(), Options{Server: dead, Workspace: "/w"}); err == nil || !strings.Contains(err.Error(), "Stdin") {
		t.Errorf("without Stdin: %v", err)
	}
}

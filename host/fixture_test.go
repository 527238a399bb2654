package host_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/tool"
)

// fixture is a jean2 home in a temporary folder with a workspace beside it.
type fixture struct {
	t      *testing.T
	layout host.Layout
	ws     string
	logs   *logSink
	opts   host.Options
	h      *host.Host
}

func bunPath(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("JEAN2_BUN"); p != "" {
		return p
	}
	p, _ := filepath.Abs("../.deps/node_modules/.bin/bun")
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("bun is not installed at %s: scripts/setup installs it", p)
		}
		t.Skipf("bun is not installed at %s: run scripts/setup", p)
	}
	return p
}

func newFixture(t *testing.T) *fixture {
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
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := layout.Ensure(); err != nil {
		t.Fatal(err)
	}
	logs := &logSink{}
	return &fixture{t: t, layout: layout, ws: ws, logs: logs, opts: host.Options{
		Layout: layout, Logger: slog.New(logs), ServerEnv: []string{"PATH=/usr/bin:/bin"},
		IdleTimeout: time.Minute, KillGrace: 300 * time.Millisecond,
	}}
}

// addTool writes a tool folder; files maps relative paths to contents.
func (f *fixture) addTool(folder string, files map[string]string) string {
	f.t.Helper()
	dir := filepath.Join(f.layout.Tools, folder)
	for rel, content := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			f.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			f.t.Fatal(err)
		}
	}
	return dir
}

// copyTool copies a folder of testdata into the tools folder.
func (f *fixture) copyTool(name string) {
	f.t.Helper()
	src := filepath.Join("testdata", name)
	if out, err := exec.Command("cp", "-r", src, filepath.Join(f.layout.Tools, name)).CombinedOutput(); err != nil {
		f.t.Fatalf("copy %s: %v %s", name, err, out)
	}
}

// start makes the host; it is closed when the test ends.
func (f *fixture) start() *host.Host {
	f.t.Helper()
	h, err := host.New(context.Background(), f.opts)
	if err != nil {
		f.t.Fatal(err)
	}
	f.h = h
	f.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h.Close(ctx)
	})
	return h
}

func (f *fixture) call(name, args string, mods ...func(*host.Call)) host.Outcome {
	f.t.Helper()
	c := host.Call{Tool: name, Args: json.RawMessage(args), SessionID: "s1", Workspace: host.Workspace{ID: "w1", Path: f.ws}}
	for _, m := range mods {
		m(&c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return f.h.Invoke(ctx, c)
}

func (f *fixture) entry(name string) host.Entry {
	f.t.Helper()
	for _, e := range f.h.Tools() {
		if e.Name == name {
			return e
		}
	}
	f.t.Fatalf("tool %s is not listed; listed: %+v", name, f.h.Tools())
	return host.Entry{}
}

// result decodes a successful outcome's result, failing the test otherwise.
func result[T any](t *testing.T, out host.Outcome) T {
	t.Helper()
	var v T
	if !out.Result.Success {
		t.Fatalf("%s failed: %s", out.Tool, out.Result.Error)
	}
	if err := json.Unmarshal(out.Result.Result, &v); err != nil {
		t.Fatalf("decode %s: %v", out.Result.Result, err)
	}
	return v
}

// answerer answers asks by type with fixed answers and records them.
type answerer struct {
	mu    sync.Mutex
	asked []tool.Ask
	byTyp map[string]string
}

func (a *answerer) Ask(_ context.Context, x tool.Ask) (json.RawMessage, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, x)
	if ans, ok := a.byTyp[x.Type]; ok {
		return json.RawMessage(ans), nil
	}
	return nil, tool.ErrNoOneToAsk
}

// logSink is a slog handler that keeps every record for the test to look at.
type logSink struct {
	mu    sync.Mutex
	lines []string
	attrs []slog.Attr
}

func (l *logSink) Enabled(context.Context, slog.Level) bool { return true }
func (l *logSink) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	for _, a := range l.attrs {
		b.WriteString(" " + a.String())
	}
	r.Attrs(func(a slog.Attr) bool { b.WriteString(" " + a.String()); return true })
	l.mu.Lock()
	l.lines = append(l.lines, b.String())
	l.mu.Unlock()
	return nil
}
func (l *logSink) WithAttrs(as []slog.Attr) slog.Handler {
	return &logChild{parent: l, attrs: as}
}
func (l *logSink) WithGroup(string) slog.Handler { return l }
func (l *logSink) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

type logChild struct {
	parent *logSink
	attrs  []slog.Attr
}

func (c *logChild) Enabled(context.Context, slog.Level) bool { return true }
func (c *logChild) Handle(ctx context.Context, r slog.Record) error {
	r.AddAttrs(c.attrs...)
	return c.parent.Handle(ctx, r)
}
func (c *logChild) WithAttrs(as []slog.Attr) slog.Handler {
	return &logChild{parent: c.parent, attrs: append(append([]slog.Attr(nil), c.attrs...), as...)}
}
func (c *logChild) WithGroup(string) slog.Handler { return c }

var _ = io.Discard

func withLedger(l *tool.Ledger) func(*host.Call) { return func(c *host.Call) { c.Ledger = l } }

package builtin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jean2/jean2/builtin"
	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/tool"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/golden")

// env is a jean2 home and a workspace in a temporary folder, with a host serving the
// built-ins: every call goes through the host as a model's call would.
type env struct {
	t       *testing.T
	root    string
	ws      string
	h       *host.Host
	session *tool.SessionFacts
	asker   *answerer
}

func newEnv(t *testing.T) *env {
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
	h, err := host.New(context.Background(), host.Options{
		Layout: layout, Builtins: builtin.Tools(builtin.Options{}), ServerEnv: []string{"PATH=/usr/bin:/bin"},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h.Close(ctx)
	})
	return &env{t: t, root: root, ws: ws, h: h, session: tool.NewSessionFacts(), asker: &answerer{byType: map[string]string{}}}
}

// write puts files in the workspace.
func (e *env) write(files map[string]string) {
	e.t.Helper()
	for rel, content := range files {
		p := filepath.Join(e.ws, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			e.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			e.t.Fatal(err)
		}
	}
}

func (e *env) read(rel string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.ws, rel))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

func (e *env) call(name, args string) host.Outcome {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := e.h.Invoke(ctx, host.Call{Tool: name, Args: json.RawMessage(args), SessionID: "s1",
		Workspace: host.Workspace{ID: "w1", Path: e.ws}, Session: e.session, Asker: e.asker})
	if out.VisualizationError != "" {
		e.t.Fatalf("%s %s: the host dropped the visualization: %s", name, args, out.VisualizationError)
	}
	return out
}

// golden compares a call's result (success, result, error, visualization) with
// testdata/golden/<name>.json, the temporary folders written as $WS and $ROOT.
func (e *env) golden(name string, out host.Outcome) {
	e.t.Helper()
	r := out.Result
	got := map[string]any{"success": r.Success}
	if r.Error != "" {
		got["error"] = r.Error
	}
	for k, raw := range map[string]json.RawMessage{"result": r.Result, "visualization": r.Visualization} {
		if len(raw) > 0 {
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				e.t.Fatalf("%s: %v", k, err)
			}
			got[k] = v
		}
	}
	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		e.t.Fatal(err)
	}
	text := strings.ReplaceAll(string(b), e.ws, "$WS")
	text = strings.ReplaceAll(text, e.root, "$ROOT") + "\n"
	path := filepath.Join("testdata", "golden", name+".json")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			e.t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			e.t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		e.t.Fatalf("%v (run go test ./builtin/ -update to write it)", err)
	}
	if !bytes.Equal(want, []byte(text)) {
		e.t.Fatalf("%s differs from its golden file %s:\n--- got\n%s\n--- want\n%s", name, path, text, want)
	}
}

// answerer answers asks by type and records them.
type answerer struct {
	mu     sync.Mutex
	asked  []tool.Ask
	byType map[string]string
}

func (a *answerer) Ask(_ context.Context, x tool.Ask) (json.RawMessage, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, x)
	if ans, found := a.byType[x.Type]; found {
		return json.RawMessage(ans), nil
	}
	return nil, tool.ErrNoOneToAsk
}

func (a *answerer) questions() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var qs []string
	for _, x := range a.asked {
		qs = append(qs, x.Question)
	}
	return qs
}

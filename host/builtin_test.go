package host_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/tool"
)

type catIn struct {
	Path string `json:"path" jsonschema:"file to read"`
}
type catOut struct {
	Text string `json:"text"`
	Key  string `json:"key"`
}

// A Go tool compiled into the binary is held to the same rules as a worker tool: the host's
// file system, declared env only, the ledger.
func TestBuiltinTypedTool(t *testing.T) {
	f := newFixture(t)
	cat, err := tool.NewTyped(tool.Definition{Name: "go-cat", Description: "Read a file.", Env: []string{"CAT_KEY", "OPENAI_API_KEY"}},
		func(ctx context.Context, c *tool.Context, in catIn) (catOut, error) {
			data, err := c.FS.ReadFile(ctx, in.Path)
			if err != nil {
				return catOut{}, err
			}
			if err := c.FS.WriteFile(ctx, "copy.txt", data); err != nil {
				return catOut{}, err
			}
			key, _ := c.Env.Get("CAT_KEY")
			if _, leaked := c.Env.Get("OPENAI_API_KEY"); leaked {
				return catOut{}, fmt.Errorf("provider key leaked")
			}
			return catOut{Text: string(data), Key: key}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	f.opts.Builtins = []tool.Tool{cat}
	f.opts.ServerEnv = []string{"CAT_KEY=k1", "OPENAI_API_KEY=sk-x"}
	f.start()
	_ = os.WriteFile(filepath.Join(f.ws, "in.txt"), []byte("from go"), 0o644)

	ledger := tool.NewLedger()
	got := result[catOut](t, f.call("go-cat", `{"path":"in.txt"}`, withLedger(ledger)))
	if got.Text != "from go" || got.Key != "k1" {
		t.Fatalf("%+v", got)
	}
	if s := ledger.Summary(); s.Changed != 1 || !strings.HasSuffix(s.Paths[0], "copy.txt") {
		t.Fatalf("ledger %+v", s)
	}
	out := f.call("go-cat", `{"path":"/etc/passwd"}`)
	if out.Result.Success || !strings.Contains(out.Result.Error, "blocked") {
		t.Fatalf("blocked: %+v", out.Result)
	}
	out = f.call("go-cat", `{"path":3}`)
	if out.Result.Success || !strings.Contains(out.Result.Error, "at /path: got number, want string") {
		t.Fatalf("schema from struct: %+v", out.Result)
	}
}

// A tool folder with a built-in's name serves in its place and is listed as replacing it;
// a folder that fails to load replaces nothing. Built-ins can be turned off one by one.
func TestBuiltinReplacedAndDisabled(t *testing.T) {
	f := newFixture(t)
	mk := func(name, text string) tool.Tool {
		tl, err := tool.NewTyped(tool.Definition{Name: name, Description: "A built-in."},
			func(context.Context, *tool.Context, struct{}) (catOut, error) { return catOut{Text: text}, nil })
		if err != nil {
			t.Fatal(err)
		}
		return tl
	}
	f.opts.Builtins = []tool.Tool{mk("go-cat", "builtin cat"), mk("go-dog", "builtin dog"), mk("go-owl", "builtin owl")}
	f.opts.DisabledBuiltins = []string{"go-owl"}
	f.addTool("my-cat", jsTool("go-cat", "", "return { success: true, result: { text: 'folder cat' } };"))
	f.addTool("broken-dog", map[string]string{"package.json": pkgJSON, "tool.ts": "export const definition = {name: 'go-dog', description: 'x', inputSchema: {type: 'object'}}; syntax error here("})
	f.start()

	if got := result[catOut](t, f.call("go-cat", `{}`)); got.Text != "folder cat" {
		t.Fatalf("go-cat served by %q", got.Text)
	}
	e := f.entry("go-cat")
	if e.Replaces != "builtin" || e.Kind == "builtin" || e.Status != host.StatusOK || !strings.HasSuffix(e.Folder, "/my-cat") {
		t.Fatalf("go-cat entry: %+v", e)
	}
	n := 0
	for _, e := range f.h.Tools() {
		if e.Name == "go-cat" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("go-cat listed %d times", n)
	}
	if got := result[catOut](t, f.call("go-dog", `{}`)); got.Text != "builtin dog" {
		t.Fatalf("go-dog served by %q", got.Text)
	}
	if e := f.entry("go-owl"); e.Status != host.StatusDisabled {
		t.Fatalf("go-owl entry: %+v", e)
	}
	if out := f.call("go-owl", `{}`); out.Result.Success {
		t.Fatalf("a disabled built-in served: %+v", out.Result)
	}
	// The server's settings turn more off, and back on, while the host runs.
	if err := f.h.SetDisabledBuiltins(context.Background(), []string{"go-dog"}); err != nil {
		t.Fatal(err)
	}
	if out := f.call("go-dog", `{}`); out.Result.Success || f.entry("go-dog").Status != host.StatusDisabled {
		t.Fatalf("go-dog after it was turned off: %+v", out.Result)
	}
	if err := f.h.SetDisabledBuiltins(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if got := result[catOut](t, f.call("go-dog", `{}`)); got.Text != "builtin dog" {
		t.Fatalf("go-dog back on: %q", got.Text)
	}
	if f.entry("go-owl").Status != host.StatusDisabled {
		t.Fatal("config's go-owl came back on with the settings' list")
	}
}

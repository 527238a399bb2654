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

// A tool folder with a working built-in's name (jean2's catalogue has shell, todoread,
// todowrite and webfetch) does not take its place: the built-in serves, and the folder is
// listed as shadowed, saying how to choose it instead (turn the built-in off); once the
// built-in is off the folder serves, listed as replacing it. A folder that fails to load
// replaces nothing. Built-ins can be turned off one by one.
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
	f.addTool("my-owl", jsTool("go-owl", "", "return { success: true, result: { text: 'folder owl' } };"))
	f.addTool("broken-dog", map[string]string{"package.json": pkgJSON, "tool.ts": "export const definition = {name: 'go-dog', description: 'x', inputSchema: {type: 'object'}}; syntax error here("})
	f.start()

	if got := result[catOut](t, f.call("go-cat", `{}`)); got.Text != "builtin cat" {
		t.Fatalf("go-cat served by %q: a folder replaced a working built-in unasked", got.Text)
	}
	var listed []host.Entry
	for _, e := range f.h.Tools() {
		if e.Name == "go-cat" {
			listed = append(listed, e)
		}
	}
	if len(listed) != 2 || listed[0].Kind != "builtin" || listed[0].Status != host.StatusOK {
		t.Fatalf("go-cat listed as %+v; want the built-in serving and the folder beside it", listed)
	}
	shadow := listed[1]
	for _, want := range []string{"has the name of jean2's built-in go-cat, which serves", `"disabledBuiltins"`, "rename"} {
		if shadow.Status != host.StatusShadowed || !strings.HasSuffix(shadow.Folder, "/my-cat") || !strings.Contains(shadow.Error, want) {
			t.Fatalf("the folder go-cat: %+v\nwant status %s and %q", shadow, host.StatusShadowed, want)
		}
	}
	// Chosen: the built-in turned off (config.json for go-owl, the settings for go-cat).
	if got := result[catOut](t, f.call("go-owl", `{}`)); got.Text != "folder owl" {
		t.Fatalf("go-owl served by %q; the built-in is off, the folder's should serve", got.Text)
	}
	if e := f.entry("go-owl"); e.Replaces != "builtin" || e.Status != host.StatusOK {
		t.Fatalf("go-owl entry: %+v", e)
	}
	if err := f.h.SetDisabledBuiltins(context.Background(), []string{"go-cat"}); err != nil {
		t.Fatal(err)
	}
	if got := result[catOut](t, f.call("go-cat", `{}`)); got.Text != "folder cat" {
		t.Fatalf("go-cat served by %q after the built-in was turned off", got.Text)
	}
	if e := f.entry("go-cat"); e.Replaces != "builtin" || e.Kind == "builtin" || e.Status != host.StatusOK {
		t.Fatalf("go-cat entry: %+v", e)
	}
	if err := f.h.SetDisabledBuiltins(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(f.layout.Tools, "my-owl")); err != nil {
		t.Fatal(err)
	}
	if err := f.h.Reload(context.Background()); err != nil {
		t.Fatal(err)
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

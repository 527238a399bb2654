package host_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	f.addTool("clash", jsTool("go-cat", "", "return { success: true };"))
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
	// A folder tool with the built-in's name is listed with the clash; the built-in serves.
	var clash string
	for _, e := range f.h.Tools() {
		if strings.HasSuffix(e.Folder, "/clash") {
			clash = e.Error
		}
	}
	if !strings.Contains(clash, `duplicate tool name "go-cat": a tool compiled into jean2 already defines it`) {
		t.Fatalf("clash: %q", clash)
	}
}

package host_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jean2/jean2/tool"
)

type fsOpIn struct {
	Op   string `json:"op" jsonschema:"read, write or rm"`
	Path string `json:"path" jsonschema:"the path"`
}

// TestContextFSProtectedPlaces: a call whose workspace holds $JEAN2_HOME (the folder above
// it, as working from ~ does) cannot read jean2's .env, change another tool, write the
// workspace's .jean2/mcp.json or remove the workspace that holds them through ctx.fs; the
// session's temporary folder, inside $JEAN2_HOME, stays open.
func TestContextFSProtectedPlaces(t *testing.T) {
	f := newFixture(t)
	fsOp, err := tool.NewTyped(tool.Definition{Name: "go-fs", Description: "Touch a file."},
		func(ctx context.Context, c *tool.Context, in fsOpIn) (string, error) {
			switch in.Op {
			case "read":
				data, err := c.FS.ReadFile(ctx, in.Path)
				return string(data), err
			case "write":
				return "", c.FS.WriteFile(ctx, in.Path, []byte("written by a tool"))
			case "rm":
				return "", c.FS.Remove(ctx, in.Path, true)
			case "add":
				return "", c.Workspaces.AddWorkspacePath(ctx, in.Path)
			}
			return "", nil
		})
	if err != nil {
		t.Fatal(err)
	}
	f.opts.Builtins = []tool.Tool{fsOp}
	other := f.addTool("other", jsTool("other", "", "return { success: true };"))
	f.start()
	root := filepath.Dir(f.layout.Home)
	f.ws = root // the workspace holds jean2's home
	env := filepath.Join(f.layout.Home, ".env")
	if err := os.WriteFile(env, []byte("OPENAI_API_KEY=sk-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	mcp := filepath.Join(root, ".jean2", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(mcp), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mcp, []byte(`{"mcpServers":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	rel := func(p string) string { r, _ := filepath.Rel(root, p); return r }
	for _, c := range []struct{ op, path, want string }{
		{"read", rel(env), "protected"},
		{"write", rel(filepath.Join(other, "tool.ts")), "protected"},
		{"write", rel(filepath.Join(other, "evil.ts")), "protected"},
		{"write", ".jean2/mcp.json", "read-only"},
		{"rm", ".", "protected"},
		{"add", f.layout.Home, "keeps closed to every tool"},
		{"add", filepath.Join(f.layout.Home, "tools"), "keeps closed to every tool"},
		{"add", "/", "whole file system"},
	} {
		out := f.call("go-fs", `{"op":"`+c.op+`","path":"`+c.path+`"}`)
		if out.Result.Success || (c.op != "add" && !strings.Contains(out.Result.Error, "EACCES")) || !strings.Contains(out.Result.Error, c.want) {
			t.Errorf("%s %s: %+v, want EACCES (%s)", c.op, c.path, out.Result, c.want)
		}
		if strings.Contains(out.ModelText+string(out.Result.Result), "sk-secret") {
			t.Fatalf("%s %s: the secret reached the model", c.op, c.path)
		}
	}
	if b, _ := os.ReadFile(mcp); string(b) != `{"mcpServers":{}}` {
		t.Fatalf("mcp.json = %q", b)
	}
	if _, err := os.Stat(filepath.Join(other, "evil.ts")); err == nil {
		t.Fatal("another tool's folder was written")
	}
	tmp := filepath.Join(f.layout.Temp, "workspaces", "w1", "s1", "note.txt")
	if out := f.call("go-fs", `{"op":"write","path":"`+tmp+`"}`); !out.Result.Success {
		t.Fatalf("write in the session's temporary folder: %+v", out.Result)
	}
	if got := result[string](t, f.call("go-fs", `{"op":"read","path":"`+tmp+`"}`)); got != "written by a tool" {
		t.Fatalf("read back %q", got)
	}
}

package node

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evanw/esbuild/pkg/api"

	"github.com/jean2/jean2/runtime/worker"
)

func TestInitializeJean2Shape(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		p := newPool(t, rt, echoTool, worker.PoolOptions{})
		info, err := p.Load(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		d := info.Definition
		if info.Shape != "jean2" || d.Name != "echo" || d.Description != "Echoes its input." || d.Timeout != 5000 {
			t.Fatalf("got %+v", info)
		}
		if !strings.Contains(string(d.InputSchema), `"text"`) {
			t.Fatalf("inputSchema %s", d.InputSchema)
		}
		if info.Runtime.Name != rt.Kind || info.Runtime.Version != rt.Version {
			t.Fatalf("runtime %+v, want %s %s", info.Runtime, rt.Kind, rt.Version)
		}
		if s := p.Stats(); s.Workers != 1 || s.Started != 1 {
			t.Fatalf("after Load: %+v", s)
		}
		// The loaded worker serves the first call.
		mustExecute(t, p, worker.Call{}, &fakeHost{})
		if s := p.Stats(); s.Started != 1 {
			t.Fatalf("the first call started another worker: %+v", s)
		}
	})
}

func TestInitializeJxShape(t *testing.T) {
	const jxDefault = `
const renamePage = {
  name: 'rename_page',
  description: 'Rename a page file.',
  parameters: { type: 'object', properties: { from: { type: 'string' }, to: { type: 'string' } }, required: ['from', 'to'] },
  interactive: true,
  strict: false,
  async execute(args, ctx) {
    ctx.ledger.record({ disk: true, ok: true, path: args.to, tool: 'rename_page' });
    return { success: true, summary: args.from + ' → ' + args.to, data: { self: this.name } };
  },
};
export default renamePage;
`
	const jxNamed = `
export const tool = {
  name: 'named_jx', description: 'A Jx tool exported as tool.',
  parameters: { type: 'object' },
  execute: async () => ({ success: true, data: 1 }),
};
export const helper = 1;
`
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		p := newPool(t, rt, jxDefault, worker.PoolOptions{})
		info, err := p.Load(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		d := info.Definition
		if info.Shape != "jx" || d.Name != "rename_page" || !d.Interactive || d.Strict == nil || *d.Strict {
			t.Fatalf("got %+v", info)
		}
		if !strings.Contains(string(d.InputSchema), `"required":["from","to"]`) {
			t.Fatalf("parameters did not become inputSchema: %s", d.InputSchema)
		}
		h := &fakeHost{}
		r := mustExecute(t, p, worker.Call{Input: []byte(`{"from":"a.md","to":"b.md"}`)}, h)
		if !r.Success || r.Summary != "a.md → b.md" || string(r.Data) != `{"self":"rename_page"}` {
			t.Fatalf("result %+v (execute must be called with this = the tool)", r)
		}
		if got := h.records("ledger.record"); len(got) != 1 || !strings.Contains(string(got[0].Params), `"path":"b.md"`) {
			t.Fatalf("ledger: %+v", got)
		}

		p2 := newPool(t, rt, jxNamed, worker.PoolOptions{})
		info, err = p2.Load(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if info.Shape != "jx" || info.Definition.Name != "named_jx" {
			t.Fatalf("named tool export: %+v", info)
		}
	})
}

func loadError(t *testing.T, p *testPool) *worker.LoadError {
	t.Helper()
	_, err := p.Load(context.Background())
	var le *worker.LoadError
	if !errors.As(err, &le) {
		t.Fatalf("Load: got %v (%T), want a *worker.LoadError", err, err)
	}
	return le
}

func TestLoadErrorHasLocation(t *testing.T) {
	const src = `export const definition = { name: 'x', description: 'x', inputSchema: { type: 'object' } };
export async function execute() { return { success: true }; }
function explode() {
  throw new Error('config file is missing');
}
explode();
`
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		p := newPool(t, rt, src, worker.PoolOptions{})
		le := loadError(t, p)
		if le.File != p.bundle || le.Line != 4 || le.Column < 3 {
			t.Fatalf("location %s:%d:%d, want %s:4:≥3 (%v)", le.File, le.Line, le.Column, p.bundle, le)
		}
		if le.Message != "Error: config file is missing" || !strings.Contains(le.Stack, "config file is missing") {
			t.Fatalf("message %q stack %q", le.Message, le.Stack)
		}
		if !strings.Contains(le.Error(), "tool test-tool failed to load at "+p.bundle+":4:") {
			t.Fatalf("Error() = %q", le.Error())
		}
		// A broken tool stays broken: the next attempt fails the same way, and so do calls.
		if _, err := execute(t, p, worker.Call{}, nil); !errors.As(err, &le) {
			t.Fatalf("execute on a broken tool: %v", err)
		}
	})
}

// A bundle carries an inline source map; the location points into the tool's own source.
func TestLoadErrorThroughSourceMap(t *testing.T) {
	dir := t.TempDir()
	tsFile := filepath.Join(dir, "tool.ts")
	src := `// a TypeScript tool
interface Input { path: string }

export const definition = { name: 'ts', description: 'x', inputSchema: { type: 'object' } };
export async function execute(input: Input) { return { success: true }; }

function readConfig(): never {
  throw new Error('no config');
}
readConfig();
`
	res := api.Transform(src, api.TransformOptions{Loader: api.LoaderTS, Format: api.FormatESModule, Sourcemap: api.SourceMapInline, Sourcefile: tsFile})
	if len(res.Errors) > 0 {
		t.Fatalf("esbuild: %v", res.Errors)
	}
	bundle := filepath.Join(dir, "bundle.mjs")
	if err := os.WriteFile(bundle, res.Code, 0o644); err != nil {
		t.Fatal(err)
	}
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		p := newPoolFor(t, rt, dir, bundle, worker.PoolOptions{})
		le := loadError(t, p)
		if le.File != tsFile || le.Line != 8 {
			t.Fatalf("location %s:%d:%d, want %s:8", le.File, le.Line, le.Column, tsFile)
		}
	})
}

func TestLoadErrorSyntax(t *testing.T) {
	const src = `export const definition = { name: 'x', description: 'x', inputSchema: { type: 'object' } };
export async function execute() {
  return {
    success: true true
  };
}
`
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		p := newPool(t, rt, src, worker.PoolOptions{})
		le := loadError(t, p)
		if le.File != p.bundle || le.Line != 4 {
			t.Fatalf("location %s:%d:%d, want %s:4 (%v)", le.File, le.Line, le.Column, p.bundle, le)
		}
	})
}

func TestLoadErrorMissingExports(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string
	}{
		{"no execute", `export const definition = { name: 'x', description: 'x', inputSchema: {} };`,
			[]string{"no `execute` function", "export async function execute(input, ctx)"}},
		{"no definition", `export async function execute() {}`,
			[]string{"no `definition` object", "export const definition"}},
		{"nothing", `export const helper = 1; export function other() {}`,
			[]string{"it exports `helper`, `other`", "Export `definition` and `execute`", "createToolDefinition"}},
		{"empty", `const x = 1;`, []string{"it exports nothing"}},
		{"jx lacking parts", `export default { name: 'x', execute() {} };`,
			[]string{"the default export is not a tool definition", "description", "parameters"}},
		{"unserializable definition", `export const definition = { name: 'x', description: 'x', inputSchema: {}, big: 10n };
export async function execute() {}`, []string{"definition cannot be serialized"}},
	}
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		for _, c := range cases {
			t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
				p := newPool(t, rt, c.src, worker.PoolOptions{})
				le := loadError(t, p)
				for _, w := range c.want {
					if !strings.Contains(le.Message, w) {
						t.Errorf("message %q lacks %q", le.Message, w)
					}
				}
			})
		}
	})
}

package host_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/tool"
)

// fuzzSchema exercises most of JSON Schema's argument checks.
const fuzzSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "maxLength": 200, "pattern": "^[^\\x00]*$"},
    "mode": {"enum": ["read", "write"]},
    "count": {"type": "integer", "minimum": 0, "maximum": 1000},
    "ratio": {"type": "number", "exclusiveMinimum": 0},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5, "uniqueItems": true},
    "opts": {"type": "object", "properties": {"deep": {"type": "boolean"}}, "required": ["deep"], "additionalProperties": false},
    "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]}
  },
  "required": ["path", "mode"],
  "additionalProperties": false
}`

// FuzzInvokeArguments sends arbitrary bytes as a call's arguments through Host.Invoke, the
// way a model's tool call arrives: it must never panic, the tool must run only on arguments
// its schema accepts, and the model must always get JSON it can read.
func FuzzInvokeArguments(f *testing.F) {
	var ran atomic.Int64
	def := tool.Definition{Name: "fuzzed", Description: "checks its arguments", InputSchema: json.RawMessage(fuzzSchema)}
	echo := tool.Func{Def: def, Run: func(_ context.Context, _ *tool.Context, args json.RawMessage) tool.Result {
		ran.Add(1)
		return tool.Result{Success: true, Result: args}
	}}
	root := f.TempDir()
	layout, err := host.LayoutFromEnv(func(k string) string {
		if k == "JEAN2_HOME" {
			return filepath.Join(root, "home")
		}
		return ""
	})
	if err != nil {
		f.Fatal(err)
	}
	h, err := host.New(context.Background(), host.Options{Layout: layout, Builtins: []tool.Tool{echo}, ServerEnv: []string{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = h.Close(context.Background()) })
	validator, err := tool.CompileSchema(json.RawMessage(fuzzSchema))
	if err != nil {
		f.Fatal(err)
	}

	for _, seed := range []string{
		`{"path":"a.txt","mode":"read"}`,
		`{"path":"a.txt","mode":"write","count":3,"ratio":0.5,"tags":["x","y"],"opts":{"deep":true},"either":7}`,
		`{"path":"","mode":"read"}`,
		`{"path":"a","mode":"delete"}`,
		`{"path":"a","mode":"read","count":1e400}`,
		`{"path":"a","mode":"read","count":12345678901234567890123}`,
		`{"path":"a","mode":"read","tags":["x","x"]}`,
		`{"path":"a","mode":"read","extra":1}`,
		`{"path":"a","mode":"read","opts":{}}`,
		`{"path":"\u0000","mode":"read"}`,
		`{"path":"a","mode":"read","path":"b"}`,
		`[1,2,3]`, `null`, `"text"`, `{`, ``, `{"path":"a","mode":"read"} trailing`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		before := ran.Load()
		out := h.Invoke(context.Background(), host.Call{Tool: "fuzzed", Args: json.RawMessage(args), SessionID: "fuzz", Workspace: host.Workspace{Path: root}})
		executed := ran.Load() > before
		// JSON, or the text of a text-shaped success (tool.Result.ModelText).
		if text, isText := out.Result.ModelText(); string(text) != out.ModelText || !isText && !json.Valid(text) {
			t.Fatalf("the model's text is neither JSON nor the result's text: %q", out.ModelText)
		}
		trimmed := strings.TrimSpace(string(args))
		if trimmed == "" {
			trimmed = "{}"
		}
		verr := validator.Validate(json.RawMessage(trimmed))
		switch {
		case executed && verr != nil:
			t.Fatalf("the tool ran on arguments its schema refuses (%v): %q", verr, args)
		case executed && !out.Result.Success:
			t.Fatalf("the tool ran but the call failed: %s", out.Result.Error)
		case !executed && out.Result.Success:
			t.Fatalf("success without running the tool: %q", args)
		case !executed && !strings.HasPrefix(out.Result.Error, "invalid arguments for fuzzed: "):
			t.Fatalf("refused arguments without saying why: %q -> %s", args, out.Result.Error)
		}
	})
}

package host_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jean2/jean2/host"
)

// A reload that finds a serving tool broken says so in the log, with the file and line and
// the version still serving, once; folders the host was told to load are the only ones.
func TestReloadFailureIsLogged(t *testing.T) {
	f := newFixture(t)
	f.opts.BunPath = bunPath(t)
	f.opts.RuntimePreference = "bun"
	dir := f.addTool("greet", map[string]string{
		"VERSION": "1.0.0\n",
		"tool.ts": "export const definition = { name: 'greet', description: 'd', inputSchema: { type: 'object' } };\nexport async function execute() { return { success: true, result: 'hi' }; }\n",
	})
	f.addTool("other", map[string]string{"tool.ts": "export const x = (;\n"})
	f.opts.Folders = []string{dir}
	h := f.start()
	if _, ok := h.Tool("other"); ok {
		t.Fatal("a folder outside Options.Folders was loaded")
	}
	if strings.Contains(f.logs.all(), "failed to") {
		t.Fatalf("the first load warned: %s", f.logs.all())
	}
	f.addTool("greet", map[string]string{"tool.ts": "export const definition = {\n  name: 'greet',\n  oops oops\n};\n"})
	for range 2 {
		if err := h.Reload(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	logs := f.logs.all()
	want := "tool greet failed to reload: greet: bundle: tool.ts:3:"
	if !strings.Contains(logs, "WARN "+want) || !strings.Contains(logs, "still serving 1.0.0") {
		t.Fatalf("log lacks %q … still serving 1.0.0:\n%s", want, logs)
	}
	if n := strings.Count(logs, want); n != 1 {
		t.Fatalf("the same failure was logged %d times:\n%s", n, logs)
	}
	if e := f.entry("greet"); e.Status != host.StatusOK || !strings.Contains(e.Error, "still serving 1.0.0") {
		t.Fatalf("entry %+v", e)
	}
}

package host_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/sandbox"
)

// Bundling runs in the host, outside the sandbox: a tool that imports /proc/self/environ as
// text would carry the server's whole environment (provider keys) in its own code. It fails
// to bundle instead, whatever the sandbox mode.
func TestSandboxImportOfServerEnvironment(t *testing.T) {
	for _, mode := range []sandbox.Mode{sandbox.ModeLandlock, sandbox.ModeOff} {
		t.Run(string(mode), func(t *testing.T) {
			sf := newSandboxFixture(t, mode, "")
			sf.addTool("environ", map[string]string{"package.json": pkgJSON, "tool.js": `import env from '/proc/self/environ' with { type: 'text' };
export const definition = { name: 'environ', description: 'returns the server environment', inputSchema: { type: 'object', properties: {} } };
export async function execute() { return { success: true, result: env }; }
`})
			if err := sf.h.Reload(context.Background()); err != nil {
				t.Fatal(err)
			}
			e := sf.entry("environ")
			want := `tool.js:1:17: import "/proc/self/environ" is outside the tool folder: a tool may only import files in its own folder or its node_modules`
			if e.Status != host.StatusError || !strings.Contains(e.Error, want) {
				t.Fatalf("entry %+v; want an error holding %s", e, want)
			}
			env := "PATH=" + os.Getenv("PATH")
			if out := sf.call("environ", `{}`); out.Result.Success || strings.Contains(out.ModelText, env) {
				t.Fatalf("the import went through: %s", out.ModelText)
			}
			sf.unaffected(t, "environ")
		})
	}
}

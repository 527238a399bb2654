package host_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/sandbox"
)

// importWriterTool is a tool whose top-level code writes marker (an absolute path) as soon
// as it is imported, where its worker may, and whose calls answer when their worker process
// started (performance.timeOrigin, ms since the epoch).
func importWriterTool(name, marker, extraDef string) string {
	return `import fs from 'node:fs';
try { fs.writeFileSync(` + strconv.Quote(marker) + `, 'imported by ' + process.pid); } catch {}
export const definition = { name: '` + name + `', description: 'writes at import', inputSchema: { type: 'object', properties: {} }` + extraDef + ` };
export async function execute() { return { success: true, result: { startedMs: performance.timeOrigin } }; }
`
}

// firstCallStarted calls the tool once and reports when its worker process started,
// relative to the call.
func firstCallStarted(t *testing.T, sf *sandboxFixture, name string) time.Duration {
	t.Helper()
	before := time.Now()
	r := result[struct {
		StartedMs float64 `json:"startedMs"`
	}](t, sf.call(name, `{}`))
	return time.UnixMicro(int64(r.StartedMs * 1000)).Sub(before)
}

// The first call of a new confined tool finds its scope's worker started ahead, and the
// tool's top-level code runs with the workspace's powers only at that call: a tool that
// writes a file in the workspace when imported has not written it once it is listed (its
// definition was learned in a worker confined to a scratch folder), and has at its first
// call.
func TestFirstCallWorkerStartedAhead(t *testing.T) {
	for _, rt := range []string{"node", "bun"} {
		t.Run(rt, func(t *testing.T) {
			var setup []func(*host.Options)
			if rt == "bun" {
				setup = append(setup, func(o *host.Options) { o.BunPath, o.RuntimePreference = bunPath(t), "bun" })
			}
			sf := newSandboxFixture(t, sandbox.ModeLandlock, "", setup...)
			marker := filepath.Join(sf.ws, "imported.txt")
			if out := sf.call("canary", `{}`); !out.Result.Success {
				t.Fatalf("canary: %s", out.Result.Error)
			}
			sf.addTool("fresh", map[string]string{"package.json": pkgJSON, "tool.js": importWriterTool("fresh", marker, "")})
			if err := sf.h.Reload(context.Background()); err != nil {
				t.Fatal(err)
			}
			if e := sf.entry("fresh"); e.Status != host.StatusOK || e.Runtime != rt {
				t.Fatalf("fresh: %+v", e)
			}
			time.Sleep(time.Second)
			if data, err := os.ReadFile(marker); err == nil {
				t.Fatalf("the tool's top-level code wrote in the workspace before its first call: %q", data)
			}
			if started := firstCallStarted(t, sf, "fresh"); started >= 0 {
				t.Fatalf("the first call's worker started %v after the call: it was not started ahead", started)
			}
			if _, err := os.Stat(marker); err != nil {
				t.Fatalf("the first call's worker did not load the tool with the workspace: %v", err)
			}
			sf.unaffected(t)
		})
	}
}

// A tool that declares permissions is refused until a person approves them: the worker
// started ahead for it is stopped without ever loading it, so its top-level code never runs
// with the workspace.
func TestStartedAheadNeverLoadsUnapprovedTool(t *testing.T) {
	sf := newSandboxFixture(t, sandbox.ModeLandlock, "")
	marker := filepath.Join(sf.ws, "imported.txt")
	if out := sf.call("canary", `{}`); !out.Result.Success {
		t.Fatalf("canary: %s", out.Result.Error)
	}
	sf.addTool("asks", map[string]string{"package.json": pkgJSON, "tool.js": importWriterTool("asks", marker, ", permissions: { network: ['example.com'] }")})
	if err := sf.h.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	out := sf.call("asks", `{}`)
	if out.Result.Success || !strings.Contains(out.Result.Error, "have not been approved") {
		t.Fatalf("a call of an unapproved declaration: %+v", out.Result)
	}
	time.Sleep(time.Second)
	if data, err := os.ReadFile(marker); err == nil {
		t.Fatalf("the unapproved tool's top-level code wrote in the workspace: %q", data)
	}
	sf.unaffected(t)
}

// A worker started ahead is used only when the tool's own would be started alike: a tool
// whose definition names it otherwise than its folder (the egress proxy made ahead names
// the folder) gets a worker of its own at its first call.
func TestStartedAheadNotUsedWhenItDiffers(t *testing.T) {
	sf := newSandboxFixture(t, sandbox.ModeLandlock, "")
	if out := sf.call("canary", `{}`); !out.Result.Success {
		t.Fatalf("canary: %s", out.Result.Error)
	}
	sf.addTool("folder-name", map[string]string{"package.json": pkgJSON, "tool.js": importWriterTool("other-name", filepath.Join(sf.ws, "imported.txt"), "")})
	if err := sf.h.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if started := firstCallStarted(t, sf, "other-name"); started < 0 {
		t.Fatalf("the first call's worker started %v before the call: the one started ahead was used", -started)
	}
	sf.unaffected(t)
}

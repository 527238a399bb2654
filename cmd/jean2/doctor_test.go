package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jean2/jean2/sandbox"
)

func TestDoctor(t *testing.T) {
	c := newCLI(t)
	out, stderr, code := c.run("", "doctor", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	var rep struct {
		Checks  []struct{ Name, Status, Detail string }
		Sandbox sandbox.Status
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	seen := map[string]string{}
	for _, ch := range rep.Checks {
		seen[ch.Name] = ch.Status + " " + ch.Detail
	}
	for _, name := range []string{"jean2", "home", "tools folder", "cache", "temp", "node", "bun", "go", "sandbox", "worker places"} {
		if _, ok := seen[name]; !ok {
			t.Errorf("no %q check in %v", name, seen)
		}
	}
	if !strings.HasPrefix(seen["node"], "ok 20.") || !strings.Contains(seen["home"], c.home) {
		t.Errorf("checks: %v", seen)
	}
	if abi, _ := sandbox.LandlockABI(); abi > 0 {
		if rep.Sandbox.LandlockABI != abi || !strings.HasPrefix(seen["sandbox"], "ok mode auto: Landlock ABI") || !strings.HasPrefix(seen["sandbox test"], "ok ") {
			t.Errorf("sandbox checks: %+v %v", rep.Sandbox, seen)
		}
	}
	// The table, and the mode from JEAN2_SANDBOX.
	out, _, code = c.runWith([]string{"JEAN2_SANDBOX=node"}, "doctor")
	if code != 0 || !strings.Contains(out, "mode node: Node's permission model for Node workers") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

func TestDoctorReportsWhatIsMissing(t *testing.T) {
	c := newCLI(t)
	out, stderr, code := c.runWith([]string{"JEAN2_NODE=/nonexistent/node", "JEAN2_BUN=/nonexistent/bun"}, "doctor")
	if code != 1 || !strings.Contains(stderr, "problem(s)") || !strings.Contains(stderr, "node: ") || !strings.Contains(stderr, "bun: ") {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	if abi, _ := sandbox.LandlockABI(); abi < 1 {
		_, stderr, code = c.runWith([]string{"JEAN2_SANDBOX=landlock"}, "doctor")
		if code != 1 || !strings.Contains(stderr, "sandbox: ") {
			t.Fatalf("landlock required without Landlock: exit %d %s", code, stderr)
		}
	}
	_, stderr, code = c.runWith([]string{"JEAN2_SANDBOX=strict"}, "doctor")
	if code != 1 || !strings.Contains(stderr, `sandbox mode "strict" is not known`) {
		t.Fatalf("a bad mode: exit %d %s", code, stderr)
	}
}

// jean2 serve refuses a providers.json it cannot read; doctor must say so too, not pass.
func TestDoctorChecksProviders(t *testing.T) {
	c := newCLI(t)
	out, stderr, code := c.run("", "doctor")
	if code != 0 {
		t.Fatalf("no providers: exit %d %s", code, stderr)
	}
	if !strings.Contains(out, "providers") || !strings.Contains(out, "no model provider is configured") {
		t.Errorf("no providers: the report does not say so:\n%s", out)
	}
	if err := os.WriteFile(filepath.Join(c.home, "providers.json"), []byte(`{"providers": {"x": {"kind": "nonsense"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = c.run("", "doctor")
	if code != 1 || !strings.Contains(stderr, "providers: ") || !strings.Contains(stderr, "providers.json") {
		t.Fatalf("an invalid providers.json: exit %d\n%s", code, stderr)
	}
	_ = os.Remove(filepath.Join(c.home, "providers.json"))
	out, _, code = c.runWith([]string{"OPENAI_API_KEY=sk-test", "OPENAI_MODEL=gpt-4o"}, "doctor")
	if code != 0 || !strings.Contains(out, "gpt-4o") {
		t.Errorf("a provider from the environment: exit %d\n%s", code, out)
	}
}

// A tools folder with folders named as built-ins (jean2's catalogue has shell, todoread,
// todowrite and webfetch): doctor says that the built-ins serve and how to choose the
// folders' tools; a built-in turned off in config.json is no longer mentioned.
func TestDoctorNamesShadowedBuiltins(t *testing.T) {
	c := newCLI(t)
	for _, name := range []string{"shell", "webfetch", "my-tool"} {
		dir := filepath.Join(c.home, "tools", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		src := "export const definition = { name: '" + name + "', description: 'd', inputSchema: { type: 'object' } };\nexport async function execute() { return { success: true }; }\n"
		if err := os.WriteFile(filepath.Join(dir, "tool.js"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check := func() string {
		out, stderr, code := c.run("", "doctor", "--json")
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
		}
		var rep struct {
			Checks []struct{ Name, Status, Detail string }
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		for _, ch := range rep.Checks {
			if ch.Name == "built-in names" {
				return ch.Status + " " + ch.Detail
			}
		}
		return ""
	}
	got := check()
	for _, want := range []string{"warn ", "shell, webfetch", "built-ins", `"disabledBuiltins"`} {
		if !strings.Contains(got, want) || strings.Contains(got, "my-tool") {
			t.Fatalf("built-in names check: %q; want it to hold %q (and not my-tool)", got, want)
		}
	}
	if err := os.WriteFile(filepath.Join(c.home, "config.json"), []byte(`{"disabledBuiltins": ["shell"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := check(); !strings.Contains(got, "webfetch") || strings.Contains(got, "shell") {
		t.Fatalf("with shell turned off: %q", got)
	}
}

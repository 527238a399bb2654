package server

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
)

const envTool = `export const definition = {
  name: 'env_probe', description: 'Say which variables are set.', env: ['MY_KEY', 'MISSING_KEY', 'OPENAI_API_KEY'],
  inputSchema: { type: 'object', properties: { n: { type: 'integer' } } },
};
export async function execute(input, ctx) {
  return { success: true, result: { my: ctx.env.get('MY_KEY') ?? null, openai: ctx.env.get('OPENAI_API_KEY') ?? null } };
}
`

func TestToolsListedRunAndChangedLive(t *testing.T) {
	f := newFixture(t)
	f.tools["env-probe"] = envTool
	f.cfg.Watch = &host.WatchOptions{Rescan: -1}
	f.start()
	ws, _ := f.session()

	var list struct{ Tools []toolView }
	f.call("GET", "/api/tools", nil, 200, &list)
	var probe *toolView
	for i := range list.Tools {
		if list.Tools[i].Name == "env_probe" {
			probe = &list.Tools[i]
		}
	}
	if probe == nil || probe.Status == "" || probe.Runtime != "node" || len(probe.InputSchema) == 0 {
		t.Fatalf("env_probe listed as %+v", probe)
	}
	env := map[string]host.EnvStatus{}
	for _, e := range probe.Env {
		env[e.Name] = e
	}
	if !env["MY_KEY"].Set || env["MISSING_KEY"].Set || !env["OPENAI_API_KEY"].Withheld {
		t.Errorf("env of env_probe = %+v", probe.Env)
	}
	_, raw := f.request("GET", "/api/tools", nil, nil)
	if strings.Contains(string(raw), "shown") || strings.Contains(string(raw), f.fake.Key) {
		t.Error("GET /api/tools shows a variable's value")
	}
	var one toolView
	f.call("GET", "/api/tools/env_probe", nil, 200, &one)
	f.call("GET", "/api/tools/nope", nil, 404, nil)

	// Run: the tool sees its own declared variable, never the provider's key.
	var out host.Outcome
	f.call("POST", "/api/tools/env_probe/run", map[string]any{"args": map[string]any{}, "workspaceId": ws.ID}, 200, &out)
	if !out.Result.Success || !strings.Contains(string(out.Result.Result), `"my":"shown"`) || !strings.Contains(string(out.Result.Result), `"openai":null`) {
		t.Fatalf("run env_probe = %+v", out)
	}
	f.call("POST", "/api/tools/env_probe/run", map[string]any{"args": map[string]any{"n": "x"}, "workspaceId": ws.ID}, 200, &out)
	if out.Result.Success {
		t.Errorf("arguments that break the schema ran: %+v", out)
	}
	for _, bad := range []map[string]any{{"args": map[string]any{}}, {"args": []int{1}, "workspaceId": ws.ID}, {"args": map[string]any{}, "workspaceId": "ws_nope"}} {
		status, body := f.request("POST", "/api/tools/env_probe/run", bad, nil)
		if status != 400 && status != 404 {
			t.Errorf("run with %v: %d %s", bad, status, body)
		}
	}

	// A tool folder appears: tools.changed on the server log, and the list has it.
	sock := f.dial("/api/ws", nil)
	dir := filepath.Join(f.cfg.Host.Layout.Tools, "late")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := strings.NewReplacer("write_note", "late_tool").Replace(writeNoteTool)
	if err := os.WriteFile(filepath.Join(dir, "tool.js"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for {
		ev, _ := sock.until("tools.changed", 60*time.Second)
		var ch struct{ Added, Changed, Removed []string }
		mustJSON(t, ev.Payload, &ch)
		if slices.Contains(ch.Added, "late_tool") {
			break
		}
	}
	f.call("GET", "/api/tools/late_tool", nil, 200, &one)
}

// A providers.json may read its key from any variable; the server withholds that variable
// from tools, even one that declares it.
func TestCustomKeyVariableWithheldFromTools(t *testing.T) {
	f := newFixture(t)
	f.tools = map[string]string{"env-probe": strings.NewReplacer("MY_KEY", "CUSTOM_LLM_KEY", "'MY_KEY'", "'CUSTOM_LLM_KEY'").Replace(envTool)}
	f.cfg.Host.ServerEnv = append(f.cfg.Host.ServerEnv, "CUSTOM_LLM_KEY=custom-secret")
	base := f.cfg.Getenv
	f.cfg.Getenv = func(k string) string {
		if k == "CUSTOM_LLM_KEY" {
			return "custom-secret"
		}
		return base(k)
	}
	if err := os.MkdirAll(f.home, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := `{"providers":[{"name":"custom","kind":"openai","baseUrl":"` + f.fake.BaseURL() + `","apiKeyEnv":"CUSTOM_LLM_KEY","model":"m"}]}`
	if err := os.WriteFile(filepath.Join(f.home, "providers.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	f.start()
	ws, _ := f.session()
	var out host.Outcome
	f.call("POST", "/api/tools/env_probe/run", map[string]any{"workspaceId": ws.ID}, 200, &out)
	if !out.Result.Success || strings.Contains(string(out.Result.Result), "custom-secret") || !strings.Contains(string(out.Result.Result), `"my":null`) {
		t.Fatalf("the tool saw the provider's key variable: %+v", out)
	}
}

// A person grants a tool's version a power it does not declare through the API (the web
// client's Allow button, the chat's /grant), as `jean2 tools approve NAME --grant` does;
// what cannot be granted is refused with why (a built-in's refusal: host's TestGrantRefusesWhatCannotBeGranted).
func TestToolGrantThroughTheAPI(t *testing.T) {
	f := newFixture(t)
	f.tools["env-probe"] = envTool
	f.start()
	// Only a person with the token grants: a request with another (a process that did not
	// read the token) is refused before anything is granted.
	if code, _ := f.request("POST", "/api/tools/env_probe/grant", map[string]any{"grants": []string{"childProcess"}}, http.Header{"Authorization": {"Bearer not-the-token"}}); code != 401 {
		t.Errorf("a grant without the token: %d, want 401", code)
	}
	var before toolView
	f.call("GET", "/api/tools/env_probe", nil, 200, &before)
	if before.Permissions != nil && before.Permissions.Granted != nil {
		t.Errorf("a grant without the token took effect: %+v", before.Permissions.Granted)
	}
	// A grant names the version that was refused (the call's toolHash): another version is
	// refused with 409, never granted unseen; a hash that is not whole is a bad request.
	f.call("POST", "/api/tools/env_probe/grant", map[string]any{"grants": []string{"childProcess"}, "hash": strings.Repeat("0", 64)}, 409, nil)
	f.call("POST", "/api/tools/env_probe/grant", map[string]any{"grants": []string{"childProcess"}, "hash": before.Hash[:12]}, 400, nil)
	var v toolView
	f.call("POST", "/api/tools/env_probe/grant", map[string]any{"grants": []string{"childProcess", "network=api.example.com"}, "hash": before.Hash}, 200, &v)
	if v.Permissions == nil || v.Permissions.Granted == nil || !v.Permissions.Granted.ChildProcess || !slices.Equal(v.Permissions.Granted.Network, []string{"api.example.com"}) {
		t.Fatalf("after the grant: %+v", v.Permissions)
	}
	var again toolView
	f.call("GET", "/api/tools/env_probe", nil, 200, &again)
	if again.Permissions == nil || again.Permissions.Granted == nil || !again.Permissions.Granted.ChildProcess {
		t.Fatalf("GET after the grant: %+v", again.Permissions)
	}
	var revoked toolView
	f.call("DELETE", "/api/tools/env_probe/grant", nil, 200, &revoked)
	if revoked.Permissions != nil && revoked.Permissions.Granted != nil {
		t.Fatalf("after DELETE the grants remain: %+v", revoked.Permissions.Granted)
	}
	f.call("DELETE", "/api/tools/nope/grant", nil, 404, nil)
	// Grants add up, but not past what a worker can be started with.
	long := func(i int) string { return fmt.Sprintf("read=/srv/%d/%s", i, strings.Repeat("d", 3000)) }
	var many []string
	for i := range 10 {
		many = append(many, long(i))
	}
	f.call("POST", "/api/tools/env_probe/grant", map[string]any{"grants": many}, 200, nil)
	if code, body := f.request("POST", "/api/tools/env_probe/grant", map[string]any{"grants": []string{long(10), long(11)}}, f.authHeader()); code != 400 || !strings.Contains(string(body), "--revoke") {
		t.Errorf("grants past the launcher's argument: %d %s", code, body)
	}
	f.call("DELETE", "/api/tools/env_probe/grant", nil, 200, nil)
	for _, c := range []struct {
		name string
		body any
		code int
		want string
	}{
		{"env_probe", map[string]any{"grants": []string{}}, 400, "grants"},
		{"env_probe", map[string]any{"grants": []string{"root"}}, 400, "give childProcess"},
		{"env_probe", map[string]any{"grants": []string{"read="}}, 400, "give childProcess"},
		{"env_probe", map[string]any{"grants": []string{"network=bad host!"}}, 400, "network"},
		{"nope", map[string]any{"grants": []string{"childProcess"}}, 404, "no tool"},
		// What would be shown as granted and not be what is granted, or nothing at all.
		{"env_probe", map[string]any{"grants": []string{"write=/"}}, 400, "never lets a tool write /"},
		{"env_probe", map[string]any{"grants": []string{"write=/usr/bin"}}, 400, "system folder"},
		{"env_probe", map[string]any{"grants": []string{"write=/tmp/ws/../../.."}}, 400, `grant \"/\"`},
		{"env_probe", map[string]any{"grants": []string{"write=../up"}}, 400, "climbs out of the workspace"},
		{"env_probe", map[string]any{"grants": []string{"read=/srv/a\nb"}}, 400, "U+000A"},
		{"env_probe", map[string]any{"grants": []string{"read=/srv/\u202etxt.ssh"}}, 400, "U+202E"},
		{"env_probe", map[string]any{"grants": []string{"read=/" + strings.Repeat("x", 5000)}}, 400, "longer than a path can be"},
		{"env_probe", map[string]any{"grants": slices.Repeat([]string{"childProcess"}, 33)}, 400, "this request had 33"},
	} {
		code, body := f.request("POST", "/api/tools/"+c.name+"/grant", c.body, f.authHeader())
		if code != c.code || !strings.Contains(string(body), c.want) {
			t.Errorf("grant %v to %s: %d %s; want %d with %q", c.body, c.name, code, body, c.code, c.want)
		}
	}
}

const declaresSpawnTool = `export const definition = {
  name: 'declares_spawn', description: 'Declares that it starts processes.',
  inputSchema: { type: 'object', properties: {} },
  permissions: { childProcess: true },
};
export async function execute() { return { success: true, result: 'ok' }; }
`

// A person approves a tool's declaration through the API (the web client's Approve) for
// the version they were shown: a stale version is refused with 409, never approved unseen.
func TestToolApproveThroughTheAPI(t *testing.T) {
	f := newFixture(t)
	f.tools["declares-spawn"] = declaresSpawnTool
	f.tools["env-probe"] = envTool
	f.start()
	var v toolView
	f.call("GET", "/api/tools/declares_spawn", nil, 200, &v)
	if v.Permissions == nil || v.Permissions.Approved || v.Hash == "" {
		t.Fatalf("before: %+v hash %q", v.Permissions, v.Hash)
	}
	f.call("POST", "/api/tools/declares_spawn/approve", map[string]any{}, 400, nil)
	// A prefix (as "version" shows it) is not a version's name: 400; a whole hash of
	// another version: 409.
	if code, body := f.request("POST", "/api/tools/declares_spawn/approve", map[string]any{"hash": v.Hash[:12]}, nil); code != 400 || !strings.Contains(string(body), "64 hexadecimal digits") {
		t.Errorf("approve with a prefix of the hash: %d %s", code, body)
	}
	f.call("POST", "/api/tools/declares_spawn/approve", map[string]any{"hash": strings.Repeat("0", 64)}, 409, nil)
	f.call("GET", "/api/tools/declares_spawn", nil, 200, &v)
	if v.Permissions.Approved {
		t.Fatal("approved by a request for another version")
	}
	f.call("POST", "/api/tools/declares_spawn/approve", map[string]any{"hash": v.Hash}, 200, &v)
	if !v.Permissions.Approved {
		t.Fatalf("after approving its version: %+v", v.Permissions)
	}
	var probe toolView
	f.call("GET", "/api/tools/env_probe", nil, 200, &probe)
	if code, body := f.request("POST", "/api/tools/env_probe/approve", map[string]any{"hash": probe.Hash}, nil); code != 400 || !strings.Contains(string(body), "nothing to approve") {
		t.Errorf("approve a tool that declares nothing: %d %s", code, body)
	}
	f.call("POST", "/api/tools/nope/approve", map[string]any{"hash": "x"}, 404, nil)
}

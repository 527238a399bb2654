package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/store"
)

// mcpPeer is an MCP server over streamable HTTP (the official Go SDK) that answers 503
// while down.
type mcpPeer struct {
	url  string
	down atomic.Bool
}

func newMCPPeer(t *testing.T, name string) *mcpPeer {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "lookup", Description: "Look a key up."},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Key string `json:"key"`
		}) (*mcp.CallToolResult, struct {
			Value string `json:"value"`
		}, error) {
			return nil, struct {
				Value string `json:"value"`
			}{name + ":" + in.Key}, nil
		})
	// A name the tool folders use too: it joins under a prefix.
	srv.AddTool(&mcp.Tool{Name: "write_note", Description: "Not the folder's.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " note"}}}, nil
		})
	p := &mcpPeer{}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.down.Load() {
			http.Error(w, "starting up", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	p.url = ts.URL
	return p
}

// writeMCPJSON writes a workspace's .jean2/mcp.json naming HTTP servers.
func writeMCPJSON(t *testing.T, folder string, servers map[string]string) {
	t.Helper()
	list := map[string]any{}
	for name, url := range servers {
		list[name] = map[string]any{"url": url}
	}
	data, _ := json.Marshal(map[string]any{"mcpServers": list})
	if err := os.MkdirAll(filepath.Join(folder, ".jean2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(folder, ".jean2", "mcp.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// trustMCP trusts the workspace's mcp.json as it is now, as a person would in the web client.
func (f *fixture) trustMCP(workspaceID string) {
	f.t.Helper()
	var state mcpTrustView
	f.call("GET", "/api/workspaces/"+workspaceID+"/mcp-trust", nil, 200, &state)
	f.call("POST", "/api/workspaces/"+workspaceID+"/mcp-trust", map[string]any{"sha256": state.SHA256}, 200, &state)
}

// toolsOf lists the tools (GET /api/tools, with the query given) by name.
func (f *fixture) toolsOf(query string) map[string]toolView {
	f.t.Helper()
	var list struct{ Tools []toolView }
	f.call("GET", "/api/tools"+query, nil, 200, &list)
	out := map[string]toolView{}
	for _, tv := range list.Tools {
		out[tv.Name] = tv
	}
	return out
}

// waitTools polls the tool list until cond holds.
func (f *fixture) waitTools(what, query string, cond func(map[string]toolView) bool) map[string]toolView {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		tools := f.toolsOf(query)
		if cond(tools) {
			return tools
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("waiting for %s; tools: %v", what, tools)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The MCP servers of a workspace's .jean2/mcp.json: their tools join the registry
// (as mcp__<server>__<tool>), run in that workspace's calls and turns and nowhere else (to
// another workspace they are unknown, and never listed in its errors); a
// server that fails is listed with its error and joins once it comes up; an edit of the
// file and the workspace's deletion take its servers away.
func TestWorkspaceMCPServers(t *testing.T) {
	f := newFixture(t)
	f.cfg.WorkspaceMCP = WorkspaceMCPOptions{Poll: 100 * time.Millisecond, MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}
	f.start()
	peer, late := newMCPPeer(t, "peer"), newMCPPeer(t, "late")
	late.down.Store(true)

	folderA, folderB := t.TempDir(), t.TempDir()
	writeMCPJSON(t, folderA, map[string]string{"peer": peer.url, "late": late.url})
	var wsA, wsB store.Workspace
	f.call("POST", "/api/workspaces", map[string]any{"path": folderA, "name": "alpha"}, 201, &wsA)
	f.call("POST", "/api/workspaces", map[string]any{"path": folderB, "name": "beta"}, 201, &wsB)
	f.trustMCP(wsA.ID)

	// peer's tools join under their server's namespace, never beside the folder tool of the
	// same name; late is listed with why it offers nothing.
	tools := f.waitTools("peer's tools and late's error", "", func(m map[string]toolView) bool {
		return m["mcp__peer__lookup"].Status == host.StatusOK && m["mcp:late"].Status == host.StatusError && strings.Contains(m["mcp:late"].Error, "retrying in")
	})
	if lk := tools["mcp__peer__lookup"]; lk.WorkspaceID != wsA.ID || lk.MCPServer != "peer" || lk.Kind != "mcp" {
		t.Errorf("lookup listed as %+v", lk)
	}
	if pw := tools["mcp__peer__write_note"]; pw.WorkspaceID != wsA.ID || tools["write_note"].WorkspaceID != "" || tools["lookup"].Name != "" {
		t.Errorf("write_note: peer's %+v, the folder's %+v", pw, tools["write_note"])
	}
	if lt := tools["mcp:late"]; lt.WorkspaceID != wsA.ID || !strings.Contains(lt.Error, "retrying in") {
		t.Errorf("the server that is down: %+v", lt)
	}
	if onlyB := f.toolsOf("?workspaceId=" + wsB.ID); onlyB["mcp__peer__lookup"].Name != "" || onlyB["mcp:late"].Name != "" || onlyB["write_note"].Name == "" {
		t.Errorf("workspace beta's list shows alpha's servers or lacks the folder tools: %v", onlyB)
	}

	// Runs: in alpha, the server answers; in beta, the tool refuses, saying whose it is.
	var out struct {
		Result struct {
			Success bool
			Result  json.RawMessage
			Error   string
		}
	}
	f.call("POST", "/api/tools/mcp__peer__lookup/run", map[string]any{"args": map[string]any{"key": "k"}, "workspaceId": wsA.ID}, 200, &out)
	if !out.Result.Success || !strings.Contains(string(out.Result.Result), "peer:k") {
		t.Fatalf("lookup in alpha: %+v", out.Result)
	}
	// In beta, alpha's tool is unknown, and the error lists beta's tools, not alpha's.
	f.call("POST", "/api/tools/mcp__peer__lookup/run", map[string]any{"args": map[string]any{"key": "k"}, "workspaceId": wsB.ID}, 200, &out)
	if e := out.Result.Error; out.Result.Success || !strings.HasPrefix(e, `unknown tool "mcp__peer__lookup": available tools are `) ||
		!strings.Contains(e, "write_note") || strings.Contains(e, "mcp__peer__write_note") || strings.Contains(e, "alpha") {
		t.Errorf("lookup in beta: %+v", out.Result)
	}
	// The harness's view: alpha's sessions are offered lookup, beta's are not.
	scoped := &scopedTools{Host: f.srv.host, w: f.srv.wsMCP}
	if _, ok := scoped.RegistryFor(wsA.ID).Lookup("mcp__peer__lookup"); !ok {
		t.Error("alpha's registry lacks lookup")
	}
	if _, ok := scoped.RegistryFor(wsB.ID).Lookup("mcp__peer__lookup"); ok {
		t.Error("beta's registry offers alpha's lookup")
	}
	if _, ok := scoped.RegistryFor(wsB.ID).Lookup("write_note"); !ok {
		t.Error("beta's registry lacks the folder tools")
	}
	// What the model of a beta session is told when it names a tool beta does not have.
	for _, name := range []string{"mcp__peer__lookup", "read_file"} {
		res := scoped.Invoke(context.Background(), host.Call{Tool: name, Args: json.RawMessage(`{}`), Workspace: host.Workspace{ID: wsB.ID, Path: folderB}})
		if e := res.Result.Error; res.Result.Success || !strings.HasPrefix(e, "unknown tool") || !strings.Contains(e, "write_note") || strings.Contains(e, "mcp__peer__write_note") {
			t.Errorf("%s in a beta turn: %+v", name, res.Result)
		}
	}

	// A turn in alpha calls the tool.
	var ses sessionView
	f.call("POST", "/api/workspaces/"+wsA.ID+"/sessions", map[string]any{"title": "alpha"}, 201, &ses)
	f.fake.Push(providertest.OpenAIToolCall("test-model", "call_1", "mcp__peer__lookup", `{"key":"turn"}`), providertest.OpenAIText("test-model", "found"))
	sock := f.dial("/api/sessions/"+ses.ID+"/ws", nil)
	f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "look it up"}, 202, nil)
	fin, before := sock.until("turn.finished", 60*time.Second)
	if !strings.Contains(string(fin.Payload), `"done"`) {
		t.Fatalf("turn: %s", fin.Payload)
	}
	found := false
	for _, ev := range before {
		if ev.Type == "part.updated" && strings.Contains(string(ev.Payload), "peer:turn") && strings.Contains(string(ev.Payload), `"complete"`) {
			found = true
		}
	}
	if !found {
		t.Errorf("no completed lookup with peer's answer among %s", types(before))
	}

	// late comes up: retried, its tools join, in their own namespace apart from peer's.
	late.down.Store(false)
	tools = f.waitTools("late's tools", "", func(m map[string]toolView) bool { return m["mcp__late__lookup"].Status == host.StatusOK })
	if tools["mcp__peer__lookup"].MCPServer != "peer" || tools["mcp:late"].Name != "" || tools["mcp__late__write_note"].WorkspaceID != wsA.ID {
		t.Errorf("after late came up: %v", tools)
	}

	// The file loses late: its tools go, peer's stay.
	writeMCPJSON(t, folderA, map[string]string{"peer": peer.url})
	f.trustMCP(wsA.ID)
	f.waitTools("late's tools to go", "", func(m map[string]toolView) bool {
		return m["mcp__late__lookup"].Name == "" && m["mcp__peer__lookup"].MCPServer == "peer"
	})
	// Deleting the workspace stops its servers.
	f.call("DELETE", "/api/workspaces/"+wsA.ID, nil, 204, nil)
	f.waitTools("alpha's tools to go", "", func(m map[string]toolView) bool {
		return m["mcp__peer__lookup"].Name == "" && m["mcp__peer__write_note"].Name == ""
	})
}

// A workspace's mcp.json cannot read provider keys or jean2's settings out of the
// server's environment through ${NAME}; other variables it can.
func TestWithholdKeys(t *testing.T) {
	env := map[string]string{"OPENAI_API_KEY": "sk", "CUSTOM_KEY": "c", "JEAN2_HOME": "/h", "TOKEN": "t", "PATH": "/bin"}
	get := withholdKeys(func(k string) string { return env[k] }, func() []string { return []string{"CUSTOM_KEY"} })
	for k, want := range map[string]string{"OPENAI_API_KEY": "", "CUSTOM_KEY": "", "JEAN2_HOME": "", "TOKEN": "t", "PATH": "/bin"} {
		if got := get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}

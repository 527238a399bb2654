package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/tool"
)

type fakeSource struct {
	name  string
	mu    sync.Mutex
	tools []tool.Tool
	err   error
}

func (s *fakeSource) Name() string { return s.name }
func (s *fakeSource) Kind() string { return "mcp" }
func (s *fakeSource) Tools() ([]tool.Tool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools, s.err
}

func constTool(name, answer string) *tool.Func {
	return &tool.Func{Def: tool.Definition{Name: name, Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`)},
		Run: func(context.Context, *tool.Context, json.RawMessage) tool.Result { return tool.Success(answer) }}
}

// Tools from a source are listed and called like any other; a clash is prefixed; a broken
// source is listed with its error; a source's change reaches the list on reload.
func TestToolSources(t *testing.T) {
	f := newFixture(t)
	f.addTool("echo", jsTool("echo", "", "return { success: true, result: 'folder' };"))
	good := &fakeSource{name: "mcp:files", tools: []tool.Tool{constTool("echo", "source"), constTool("list", "listed")}}
	bad := &fakeSource{name: "mcp:down", err: errors.New("server exited: command not found")}
	f.opts.Sources = []host.ToolSource{good, bad}
	f.start()

	if got := result[string](t, f.call("echo", `{}`)); got != "folder" {
		t.Fatalf("echo %q", got)
	}
	if got := result[string](t, f.call("mcp_files_echo", `{}`)); got != "source" {
		t.Fatalf("prefixed %q", got)
	}
	if got := result[string](t, f.call("list", `{}`)); got != "listed" {
		t.Fatalf("list %q", got)
	}
	if e := f.entry("mcp:down"); e.Status != host.StatusError || !strings.Contains(e.Error, "command not found") {
		t.Fatalf("broken source %+v", e)
	}

	events := make(chan host.ToolsChanged, 4)
	defer f.h.Subscribe(events)()
	good.mu.Lock()
	good.tools = append(good.tools[:1:1], constTool("grep", "grepped"))
	good.mu.Unlock()
	if err := f.h.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	ev := <-events
	if strings.Join(ev.Added, ",") != "grep" || strings.Join(ev.Removed, ",") != "list" || len(ev.Changed) != 0 {
		t.Fatalf("event %+v", ev)
	}
}

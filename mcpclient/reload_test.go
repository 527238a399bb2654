package mcpclient

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jean2/jean2/tool"
)

// An mcp.json edited while jean2 runs takes effect: a server added connects and offers its
// tools, one removed is stopped, one changed is restarted with its new entry, and one left
// as it was stays the same connected server, its call in flight finishing.
func TestWatchAppliesAnEditedFile(t *testing.T) {
	p1, p2 := newPeer(t), newPeer(t)
	file := filepath.Join(t.TempDir(), "mcp.json")
	write := func(body string) {
		t.Helper()
		// Written beside and renamed, as editors save.
		tmp := file + ".tmp"
		if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, file); err != nil {
			t.Fatal(err)
		}
	}
	write(fmt.Sprintf(`{"mcpServers": {"a": {"url": %q}}}`, p1.url))
	load := func() (Config, error) { return Load(file) }
	cfg, err := load()
	if err != nil {
		t.Fatal(err)
	}
	m := New(cfg, err, Options{MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	defer m.Close()
	var changes atomic.Int32
	m.OnChange(func() { changes.Add(1) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	m.Start(ctx)
	cancel()
	a := m.Servers()[0]
	if _, err := a.Tools(); err != nil {
		t.Fatalf("server a: %v", err)
	}
	watch, stop := context.WithCancel(context.Background())
	defer stop()
	go m.Watch(watch, 20*time.Millisecond, load)

	// A call in flight on a, the server kept, while b is added.
	slow := toolNamed(t, a, "mcp__a__slow")
	done := make(chan tool.Result, 1)
	go func() { done <- run(t, slow, `{}`, nil) }()
	before := changes.Load()
	write(fmt.Sprintf(`{"mcpServers": {"a": {"url": %q}, "b": {"url": %q}}}`, p1.url, p2.url))
	waitFor(t, "server b's tools", func() bool { return hasTool(m, "mcp__b__add") })
	if changes.Load() == before {
		t.Error("adding a server did not tell the host")
	}
	if s := serverNamed(m, "a"); s != a {
		t.Fatal("the unchanged server a was replaced")
	}
	select {
	case r := <-done:
		t.Fatalf("the call on the kept server ended: %+v", r)
	case <-time.After(50 * time.Millisecond):
	}

	// a changed (a header added), b removed.
	write(fmt.Sprintf(`{"mcpServers": {"a": {"url": %q, "headers": {"Authorization": "Bearer new"}}}}`, p1.url))
	waitFor(t, "server b gone", func() bool { return serverNamed(m, "b") == nil })
	if s := serverNamed(m, "a"); s == a || s == nil {
		t.Fatalf("the changed server a was not restarted: %v", s)
	}
	waitFor(t, "a's new connection with its header", func() bool {
		return hasTool(m, "mcp__a__add") && p1.auth.Load() == "Bearer new"
	})
	<-done // the old a stopped: its call ended

	// A broken file is listed with its error; the servers of the last good one are gone
	// only when a good file says so.
	write(`{"mcpServers": [`)
	waitFor(t, "the broken file listed", func() bool {
		for _, src := range m.Sources() {
			if src.Name() == "mcp.json:"+file {
				return true
			}
		}
		return false
	})
	if !hasTool(m, "mcp__a__add") {
		t.Fatal("a half-written file stopped the servers")
	}
	write(`{"mcpServers": {}}`)
	waitFor(t, "every server and the error gone", func() bool { return len(m.Sources()) == 0 })
}

func serverNamed(m *Manager, name string) *Server {
	for _, s := range m.Servers() {
		if s.cfg.Name == name {
			return s
		}
	}
	return nil
}

func hasTool(m *Manager, name string) bool {
	for _, src := range m.Sources() {
		tools, _ := src.Tools()
		for _, tl := range tools {
			if tl.Definition().Name == name {
				return true
			}
		}
	}
	return false
}

func toolNamed(t *testing.T, s *Server, name string) tool.Tool {
	t.Helper()
	tools, err := s.Tools()
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools {
		if tl.Definition().Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %s", name)
	return nil
}

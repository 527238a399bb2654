package main

import (
	"context"
	"path/filepath"
	"sync"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/mcpclient"
)

// mcpStartWait bounds how long a command waits for the MCP servers of mcp.json to come up
// before it lists or runs tools; a server still starting is listed with that and joins
// when it is up.
const mcpStartWait = 15 * time.Second

// mcpConfigFiles are the mcp.json files that apply: $JEAN2_HOME's, then the workspace's
// (which wins for a server both name).
func mcpConfigFiles(layout host.Layout, workspace string) []string {
	files := []string{filepath.Join(layout.Home, "mcp.json")}
	if workspace != "" {
		files = append(files, filepath.Join(workspace, ".jean2", "mcp.json"))
	}
	return files
}

// startMCPClients connects to the MCP servers listed for the workspace ("" for none) and
// waits for their first attempts.
func startMCPClients(ctx context.Context, e env, workspace string) (*mcpclient.Manager, error) {
	layout, err := host.LayoutFromEnv(e.getenv)
	if err != nil {
		return nil, err
	}
	if e.getenv(mcpclient.NestedEnv) != "" {
		// Started as an MCP server by a jean2: its servers are the parent's business, and
		// connecting them here could start this jean2 again, without end.
		return mcpclient.New(mcpclient.Config{}, nil, mcpclient.Options{}), nil
	}
	cfg, loadErr := mcpclient.Load(mcpConfigFiles(layout, workspace)...)
	m := mcpclient.New(cfg, loadErr, mcpclient.Options{Getenv: e.getenv, Version: version, Logger: cliLogger(e)})
	wait, cancel := context.WithTimeout(ctx, mcpStartWait)
	defer cancel()
	m.Start(wait)
	return m, nil
}

// openHostWithMCP opens the host with the tools of the workspace's MCP servers joined in; a
// server's tool change reloads the host. closeAll stops the host, then the servers.
func openHostWithMCP(ctx context.Context, e env, workspace string) (h *host.Host, closeAll func(), err error) {
	m, err := startMCPClients(ctx, e, workspace)
	if err != nil {
		return nil, nil, err
	}
	// A server may change its tools while the host is being made; that change is kept and
	// applied once the host exists.
	var mu sync.Mutex
	var live *host.Host
	missed := false
	reload := func(h *host.Host) {
		if err := h.Reload(context.Background()); err != nil {
			cliLogger(e).Warn("reload after an MCP server's tools changed", "error", err)
		}
	}
	m.OnChange(func() {
		mu.Lock()
		h := live
		missed = h == nil
		mu.Unlock()
		if h != nil {
			reload(h)
		}
	})
	h, err = openHost(ctx, e, m.Sources()...)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	mu.Lock()
	live = h
	again := missed
	mu.Unlock()
	if again {
		reload(h)
	}
	return h, func() { closeHost(h); m.Close() }, nil
}

// workingDir is the current folder, the workspace of commands that take none; "" when it is
// unknown.
func workingDir() string {
	wd, _ := filepath.Abs(".")
	return wd
}

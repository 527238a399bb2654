package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/mcpclient"
	"github.com/jean2/jean2/policy"
)

// mcpStartWait bounds how long a command waits for the MCP servers of mcp.json to come up
// before it lists or runs tools; a server still starting is listed with that and joins
// when it is up.
const mcpStartWait = 15 * time.Second

// mcpConfig is what the mcp.json files that apply list: $JEAN2_HOME's, then the
// workspace's (which wins for a server both name) — the workspace's only when a person
// trusted its content (`jean2 mcp trust`); an untrusted one is left out and said so on
// stderr, with how to trust it. The workspace file is read once: what was hashed is what
// starts.
func mcpConfig(e env, layout host.Layout, workspace string) (mcpclient.Config, error) {
	cfg, loadErr := mcpclient.Load(filepath.Join(layout.Home, "mcp.json"))
	if workspace == "" {
		return cfg, loadErr
	}
	file := mcpclient.ReadWorkspaceFile(workspace)
	if !file.Present {
		return cfg, loadErr
	}
	trusted, err := mcpclient.NewTrust(layout.Home).Trusted(file)
	if err != nil {
		fmt.Fprintf(e.stderr, "jean2: %s is not started: %v\n", file.Path, err)
		return cfg, loadErr
	}
	if !trusted {
		fmt.Fprintf(e.stderr, "jean2: %v\n", &mcpclient.UntrustedError{File: file})
		return cfg, loadErr
	}
	own, fileErr := file.Config()
	return mcpclient.Merge(cfg, own), errors.Join(loadErr, fileErr)
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
	cfg, loadErr := mcpConfig(e, layout, workspace)
	sb, err := mcpSandbox(e, layout)
	if err != nil {
		return nil, err
	}
	// A workspace's file gets none of the key variables providers.json names; one that
	// cannot be read withholds nothing more than the reserved names, and says so.
	withheld, keysErr := policy.ProviderKeyNames(layout.Home)
	if keysErr != nil {
		cliLogger(e).Warn("MCP servers", "error", keysErr)
	}
	m := mcpclient.New(cfg, loadErr, mcpclient.Options{Getenv: e.getenv, Version: version, Logger: cliLogger(e), Tokens: mcpclient.NewTokenStore(layout.Home),
		Roots: roots(workspace), Sandbox: sb, Withheld: withheld})
	m.OnClose(func() { _ = sb.Close() })
	wait, cancel := context.WithTimeout(ctx, mcpStartWait)
	defer cancel()
	m.Start(wait)
	return m, nil
}

// mcpSandbox is what confines the stdio servers jean2 starts: the sandbox mode and launcher
// of the tool workers (JEAN2_SANDBOX), with the workers' task limit.
func mcpSandbox(e env, layout host.Layout) (*host.MCPSandbox, error) {
	opts, err := sandboxOptions(e)
	if err != nil {
		return nil, err
	}
	return host.NewMCPSandbox(host.MCPSandboxOptions{Sandbox: opts, Layout: layout, Logger: cliLogger(e)}), nil
}

// watchMCPConfig applies the edits of $JEAN2_HOME/mcp.json to m (mcpclient.Manager.Watch)
// until the returned stop is called: a long-running jean2 (serve, chat's own server) takes a
// server added, removed or changed without a restart. A nested jean2 has no servers of its
// own to watch.
func watchMCPConfig(ctx context.Context, e env, m *mcpclient.Manager) (stop func()) {
	layout, err := host.LayoutFromEnv(e.getenv)
	if err != nil || e.getenv(mcpclient.NestedEnv) != "" {
		return func() {}
	}
	file := filepath.Join(layout.Home, "mcp.json")
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Watch(ctx, 0, func() (mcpclient.Config, error) { return mcpclient.Load(file) })
	}()
	return func() { cancel(); <-done }
}

// roots are the folders offered to MCP servers as roots: the workspace's, none without one.
func roots(workspace string) []string {
	if workspace == "" {
		return nil
	}
	return []string{workspace}
}

// openHostWithMCP opens the host with the tools of the workspace's MCP servers joined in; a
// server's tool change reloads the host. m runs the servers (their prompts too); closeAll
// stops the host, then the servers.
func openHostWithMCP(ctx context.Context, e env, workspace string, tune func(*host.Options)) (h *host.Host, m *mcpclient.Manager, closeAll func(), err error) {
	m, err = startMCPClients(ctx, e, workspace)
	if err != nil {
		return nil, nil, nil, err
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
	h, err = openHostTuned(ctx, e, tune, m.Sources()...)
	if err != nil {
		m.Close()
		return nil, nil, nil, err
	}
	mu.Lock()
	live = h
	again := missed
	mu.Unlock()
	if again {
		reload(h)
	}
	return h, m, func() { closeHost(h); m.Close() }, nil
}

// workingDir is the current folder, the workspace of commands that take none; "" when it is
// unknown.
func workingDir() string {
	wd, _ := filepath.Abs(".")
	return wd
}

package server

import (
	"fmt"
	"net/http"
	"slices"
	"sync"

	"github.com/jean2/jean2/ask"
	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/mcpserver"
)

// mcpServers are the MCP servers of /mcp: one per workspace a client names with
// ?workspace=<id>, and one for the folder jean2 serve started in, each made on first use.
//
// Each serves with the workspace's folders and the unattended policy of the settings as
// they are when a request comes: a server made under other ones is brought up to date
// (SetWorkspace, SetPolicy), so its clients' sessions go on; calls already running keep
// what they started with. Only a server that cannot be (its workspace's new folder is not
// a folder) is replaced: its clients get 404 for their session id on their next request
// and initialize again, as the MCP spec has them do (Close ends only the calls parked on a
// client's input, whose retries would reach the new server).
type mcpServers struct {
	mu     sync.Mutex
	byKey  map[string]*mcpEntry
	closed bool
}

// mcpEntry is one /mcp server and what it was made with.
type mcpEntry struct {
	srv     *mcpserver.Server
	handler http.Handler
	ws      host.Workspace
	policy  string // the autoApprove setting
}

func (m *mcpServers) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	for _, e := range m.byKey {
		_ = e.srv.Close()
	}
	m.byKey = nil
}

// drop closes the server of a workspace that is gone.
func (m *mcpServers) drop(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.byKey[key]; ok {
		_ = e.srv.Close()
		delete(m.byKey, key)
	}
}

// serveMCP serves MCP over streamable HTTP. The guard in front has done auth and Origin.
func (s *Server) serveMCP(w http.ResponseWriter, r *http.Request) error {
	key, ws := "", host.Workspace{Path: s.cfg.MCPWorkspace}
	if id := r.URL.Query().Get("workspace"); id != "" {
		stored, err := s.workspace(r.Context(), id)
		if err != nil {
			return err
		}
		key, ws = id, host.Workspace{ID: stored.ID, Path: stored.Path, Allowed: stored.AllowedPaths}
	}
	h, err := s.mcpHandler(key, ws, s.settings.get().AutoApprove)
	if err != nil {
		return err
	}
	h.ServeHTTP(w, r)
	return nil
}

func sameWorkspace(a, b host.Workspace) bool {
	return a.ID == b.ID && a.Path == b.Path && slices.Equal(a.Allowed, b.Allowed)
}

// mcpHandler returns the handler serving key with ws and the policy of autoApprove.
func (s *Server) mcpHandler(key string, ws host.Workspace, autoApprove string) (http.Handler, error) {
	m := &s.mcp
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errorf(http.StatusServiceUnavailable, codeUnavailable, "the server is shutting down")
	}
	// The policy decides permissions for a client that cannot be asked.
	policy, err := ask.NewPolicy(autoApprove)
	if err != nil {
		policy = ask.Policy{}
	}
	if e, ok := m.byKey[key]; ok {
		if e.policy != autoApprove {
			e.srv.SetPolicy(policy)
			e.policy = autoApprove
		}
		if !sameWorkspace(e.ws, ws) && e.srv.SetWorkspace(ws) == nil {
			e.ws = ws
		}
		if e.policy == autoApprove && sameWorkspace(e.ws, ws) {
			return e.handler, nil
		}
		// It cannot be brought up to date: a new server takes over.
		delete(m.byKey, key)
		_ = e.srv.Close()
	}
	srv, err := mcpserver.New(s.host, mcpserver.Options{Workspace: ws, Policy: policy, Version: s.cfg.Version, Logger: s.log, LLM: s.providers.LLM("", ""), Imports: s.cfg.MCPPrompts})
	if err != nil {
		return nil, fmt.Errorf("start MCP for workspace %q: %w", ws.Path, err)
	}
	if m.byKey == nil {
		m.byKey = map[string]*mcpEntry{}
	}
	e := &mcpEntry{srv: srv, handler: srv.HTTPHandler(), ws: ws, policy: autoApprove}
	m.byKey[key] = e
	return e.handler, nil
}

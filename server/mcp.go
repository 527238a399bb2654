package server

import (
	"fmt"
	"net/http"
	"sync"

	"github.com/jean2/jean2/ask"
	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/mcpserver"
)

// mcpServers are the MCP servers of /mcp: one per workspace a client names with
// ?workspace=<id>, and one for the folder jean2 serve started in, each made on first use.
type mcpServers struct {
	mu      sync.Mutex
	byKey   map[string]http.Handler
	servers []*mcpserver.Server
	closed  bool
}

func (m *mcpServers) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	for _, srv := range m.servers {
		_ = srv.Close()
	}
	m.servers, m.byKey = nil, nil
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
	h, err := s.mcpHandler(key, ws)
	if err != nil {
		return err
	}
	h.ServeHTTP(w, r)
	return nil
}

func (s *Server) mcpHandler(key string, ws host.Workspace) (http.Handler, error) {
	m := &s.mcp
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errorf(http.StatusServiceUnavailable, codeUnavailable, "the server is shutting down")
	}
	if h, ok := m.byKey[key]; ok {
		return h, nil
	}
	// The policy decides permissions for a client that cannot be asked. It is the setting
	// when the workspace's MCP server is made; a change applies to servers made later.
	policy, err := ask.NewPolicy(s.settings.get().AutoApprove)
	if err != nil {
		policy = ask.Policy{}
	}
	srv, err := mcpserver.New(s.host, mcpserver.Options{Workspace: ws, Policy: policy, Version: s.cfg.Version, Logger: s.log})
	if err != nil {
		return nil, fmt.Errorf("start MCP for workspace %q: %w", ws.Path, err)
	}
	if m.byKey == nil {
		m.byKey = map[string]http.Handler{}
	}
	h := srv.HTTPHandler()
	m.byKey[key] = h
	m.servers = append(m.servers, srv)
	return h, nil
}

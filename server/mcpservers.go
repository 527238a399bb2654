package server

import (
	"context"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/jean2/jean2/mcpclient"
	"github.com/jean2/jean2/sandbox"
)

// signInWait bounds one sign-in started from the web client: the person has this long to
// allow access on the authorization server's page.
const signInWait = 10 * time.Minute

// mcpServerView is one MCP server jean2 connects to, as GET /api/mcp/servers shows it.
type mcpServerView struct {
	Name        string `json:"name"`
	Type        string `json:"type"` // stdio, http, sse
	URL         string `json:"url,omitempty"`
	File        string `json:"file"`
	WorkspaceID string `json:"workspaceId,omitempty"`
	// State is connected, connecting, "needs sign-in" or error.
	State string `json:"state"`
	Error string `json:"error,omitempty"`
	// SignedIn is true when a token is kept for the server.
	SignedIn bool `json:"signedIn"`
	// SigningIn is true while a sign-in started from the web client waits for the person.
	SigningIn bool `json:"signingIn"`
	// Sandbox, for a stdio server, is "confined" or why it is not: "unconfined (\"sandbox\":
	// false)", "unconfined (sandbox mode off)"; Abilities says what it can do.
	Sandbox   string `json:"sandbox,omitempty"`
	Abilities string `json:"abilities,omitempty"`
}

// mcpSandboxState says whether a stdio server runs confined, and why not.
func mcpSandboxState(cfg mcpclient.ServerConfig, mode sandbox.Mode) string {
	switch {
	case cfg.Type != "stdio":
		return ""
	case !cfg.Confined():
		return `unconfined ("sandbox": false)`
	case mode == sandbox.ModeOff:
		return "unconfined (sandbox mode off)"
	}
	return "confined"
}

// mcpSignIns are the sign-ins started from the web client, one per server at most.
type mcpSignIns struct {
	mu      sync.Mutex
	running map[*mcpclient.Server]bool
}

// mcpClientServers are the servers of $JEAN2_HOME/mcp.json (the host's sources) and of the
// workspaces' trusted .jean2/mcp.json, with the workspace each belongs to ("" for home).
func (s *Server) mcpClientServers() (out []*mcpclient.Server, wsOf map[*mcpclient.Server]string) {
	wsOf = map[*mcpclient.Server]string{}
	sources := slices.Clone(s.cfg.Host.Sources)
	for _, set := range s.cfg.Host.SourceSets {
		sources = append(sources, set.Sources()...)
	}
	for _, src := range sources {
		if ms, ok := src.(*mcpclient.Server); ok {
			out = append(out, ms)
		}
	}
	w := s.wsMCP
	w.mu.Lock()
	for id, ws := range w.byWS {
		if ws.m == nil {
			continue
		}
		for _, ms := range ws.m.Servers() {
			out = append(out, ms)
			wsOf[ms] = id
		}
	}
	w.mu.Unlock()
	return out, wsOf
}

func (s *Server) mcpServerView(ms *mcpclient.Server, workspaceID string, tokens *mcpclient.TokenStore) mcpServerView {
	cfg := ms.Config()
	state, err := ms.Status()
	v := mcpServerView{Name: cfg.Name, Type: cfg.Type, URL: cfg.URL, File: cfg.File, WorkspaceID: workspaceID, State: string(state)}
	if err != nil && state != mcpclient.StateConnected {
		v.Error = err.Error()
	}
	if cfg.Type != "stdio" {
		v.SignedIn = tokens.HasToken(cfg.URL)
	} else {
		v.Sandbox, v.Abilities = mcpSandboxState(cfg, s.mcpSandbox.Status().Mode), cfg.Abilities()
	}
	s.mcpSignIns.mu.Lock()
	v.SigningIn = s.mcpSignIns.running[ms]
	s.mcpSignIns.mu.Unlock()
	return v
}

// getMCPServers answers GET /api/mcp/servers: every MCP server jean2 connects to and its state.
func (s *Server) getMCPServers(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]any{"servers": s.mcpServerViews()})
	return nil
}

// mcpServerViews are the rows of GET /api/mcp/servers: the running servers, then those of
// $JEAN2_HOME/mcp.json not started yet, by workspace and name.
func (s *Server) mcpServerViews() []mcpServerView {
	servers, wsOf := s.mcpClientServers()
	tokens := mcpclient.NewTokenStore(s.cfg.Host.Layout.Home)
	views := []mcpServerView{}
	for _, ms := range servers {
		views = append(views, s.mcpServerView(ms, wsOf[ms], tokens))
	}
	views = append(views, s.notStartedMCP(views)...)
	sort.Slice(views, func(i, j int) bool {
		if views[i].WorkspaceID != views[j].WorkspaceID {
			return views[i].WorkspaceID < views[j].WorkspaceID
		}
		return views[i].Name < views[j].Name
	})
	return views
}

// findMCPServer is the server NAME of the workspace the request names (?workspaceId=, none
// for $JEAN2_HOME's).
func (s *Server) findMCPServer(r *http.Request) (*mcpclient.Server, string, error) {
	name, wsID := r.PathValue("name"), r.URL.Query().Get("workspaceId")
	servers, wsOf := s.mcpClientServers()
	for _, ms := range servers {
		if ms.Config().Name == name && wsOf[ms] == wsID {
			return ms, wsID, nil
		}
	}
	if wsID != "" {
		return nil, "", notFound("no MCP server %q in workspace %s's trusted .jean2/mcp.json", name, wsID)
	}
	return nil, "", notFound("no MCP server %q in $JEAN2_HOME/mcp.json (a workspace's server needs ?workspaceId=)", name)
}

// postMCPSignIn answers POST /api/mcp/servers/{name}/sign-in: it starts the OAuth sign-in
// of an HTTP server and answers with the authorization page to open
// ({"authorizationUrl": …}, 202), or {"state": "connected"} when the server let jean2 in
// without one. The page's answer comes back to a listener on this machine's loopback
// (127.0.0.1), so the browser must run on the machine jean2 serve runs on (elsewhere:
// jean2 mcp login NAME there). The waiting server connects once the person allowed access.
func (s *Server) postMCPSignIn(w http.ResponseWriter, r *http.Request) error {
	ms, wsID, err := s.findMCPServer(r)
	if err != nil {
		return err
	}
	cfg := ms.Config()
	if cfg.Type == "stdio" {
		return badRequest("MCP server %s is started as a command (stdio): there is nothing to sign in to", cfg.Name)
	}
	s.mcpSignIns.mu.Lock()
	if s.mcpSignIns.running == nil {
		s.mcpSignIns.running = map[*mcpclient.Server]bool{}
	}
	if s.mcpSignIns.running[ms] {
		s.mcpSignIns.mu.Unlock()
		return errorf(http.StatusConflict, codeConflict, "a sign-in to %s is already waiting for you: finish it on the page it opened (it ends after %s)", cfg.Name, signInWait)
	}
	s.mcpSignIns.running[ms] = true
	s.mcpSignIns.mu.Unlock()

	tokens := mcpclient.NewTokenStore(s.cfg.Host.Layout.Home)
	pages := make(chan string, 1)
	done := make(chan error, 1)
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		defer func() {
			s.mcpSignIns.mu.Lock()
			delete(s.mcpSignIns.running, ms)
			s.mcpSignIns.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(s.ctx, signInWait)
		defer cancel()
		_, closeFn, err := mcpclient.Connect(ctx, cfg, mcpclient.Options{
			Getenv: s.cfg.Getenv, Version: s.cfg.Version, Logger: s.log, Tokens: tokens,
			SignIn: &mcpclient.SignIn{Store: tokens, Getenv: s.cfg.Getenv, Open: func(_ context.Context, page string) error {
				select {
				case pages <- page:
				default:
				}
				return nil
			}},
		})
		if err == nil {
			closeFn()
			ms.Retry()
			s.log.Info("signed in to an MCP server", "server", cfg.Name, "workspace", wsID)
		} else {
			s.log.Warn("MCP sign-in failed", "server", cfg.Name, "workspace", wsID, "error", err)
		}
		done <- err
	}()
	select {
	case page := <-pages:
		writeJSON(w, http.StatusAccepted, map[string]any{"authorizationUrl": page, "server": cfg.Name})
		return nil
	case err := <-done:
		if err != nil {
			return errorf(http.StatusBadGateway, codeUnavailable, "sign in to %s (%s): %v", cfg.Name, cfg.URL, err)
		}
		writeJSON(w, http.StatusOK, map[string]any{"state": string(mcpclient.StateConnected), "server": cfg.Name})
		return nil
	case <-r.Context().Done():
		return r.Context().Err()
	}
}

// deleteMCPSignIn answers DELETE /api/mcp/servers/{name}/sign-in: the kept token is
// forgotten (sign out); the server needs a sign-in at its next connection.
func (s *Server) deleteMCPSignIn(w http.ResponseWriter, r *http.Request) error {
	ms, _, err := s.findMCPServer(r)
	if err != nil {
		return err
	}
	cfg := ms.Config()
	if cfg.Type == "stdio" {
		return badRequest("MCP server %s is started as a command (stdio): there is no sign-in to forget", cfg.Name)
	}
	if err := mcpclient.NewTokenStore(s.cfg.Host.Layout.Home).Forget(cfg.URL); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// getMCPCatalog answers GET /api/mcp/servers/{name}/catalog[?workspaceId=]: the server's
// resources, resource templates and prompts ({"resources","templates","prompts"}); 409
// while it is not connected.
func (s *Server) getMCPCatalog(w http.ResponseWriter, r *http.Request) error {
	ms, _, err := s.findMCPServer(r)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	if state, _ := ms.Status(); state != mcpclient.StateConnected {
		return errorf(http.StatusConflict, codeConflict, "MCP server %s is %s: connect it first", ms.Config().Name, state)
	}
	cat, err := ms.Catalog(ctx)
	if err != nil {
		return errorf(http.StatusBadGateway, codeUnavailable, "%v", err)
	}
	writeJSON(w, http.StatusOK, cat)
	return nil
}

// getMCPResource answers GET /api/mcp/servers/{name}/resource?uri=…[&workspaceId=]: one
// resource's contents as the server gives them ({"contents":[{"uri","mimeType","text"|"blob"}]}).
func (s *Server) getMCPResource(w http.ResponseWriter, r *http.Request) error {
	ms, _, err := s.findMCPServer(r)
	if err != nil {
		return err
	}
	uri := r.URL.Query().Get("uri")
	if uri == "" {
		return badRequest("give the resource's uri: ?uri=…")
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	res, err := ms.ReadResource(ctx, uri)
	if err != nil {
		return errorf(http.StatusBadGateway, codeUnavailable, "%v", err)
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

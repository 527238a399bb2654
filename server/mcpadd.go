package server

import (
	"errors"
	"net/http"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jean2/jean2/mcpclient"
	"github.com/jean2/jean2/policy"
)

// mcpServerAdd is the body of POST /api/mcp/servers: a server to add to
// $JEAN2_HOME/mcp.json. Command (with Args, Env and Network) makes a stdio server, which
// runs confined; URL an HTTP one. What a person adds through the API cannot run unconfined
// ("sandbox": false is for the file itself).
type mcpServerAdd struct {
	Name    string            `json:"name"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Network []string          `json:"network,omitempty"`
	URL     string            `json:"url,omitempty"`
}

// homeMCPFile is $JEAN2_HOME/mcp.json.
func (s *Server) homeMCPFile() string { return filepath.Join(s.cfg.Host.Layout.Home, "mcp.json") }

// postMCPServer answers POST /api/mcp/servers: it adds the server to $JEAN2_HOME/mcp.json
// (400 with what is wrong, 409 when the name is taken) and answers with its row.
func (s *Server) postMCPServer(w http.ResponseWriter, r *http.Request) error {
	var req mcpServerAdd
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	cfg := mcpclient.ServerConfig{Name: strings.TrimSpace(req.Name), Command: strings.TrimSpace(req.Command), Args: req.Args,
		Env: req.Env, Network: req.Network, URL: strings.TrimSpace(req.URL)}
	// ${NAME} in an env value is filled in from jean2's own environment: a request must not
	// be a way to hand the model-provider keys or jean2's settings to a server of its choice.
	keys := s.providers.Set().KeyEnvNames()
	for _, name := range cfg.References() {
		if policy.ReservedEnv(name) || slices.Contains(keys, name) {
			return badRequest("server %s: env names ${%s}, a variable jean2 keeps from tools and servers; give the value itself", cfg.Name, name)
		}
	}
	file := s.homeMCPFile()
	if err := mcpclient.AddServer(file, cfg); errors.Is(err, mcpclient.ErrServerExists) {
		return errorf(http.StatusConflict, codeConflict, "%v", err)
	} else if err != nil {
		return badRequest("%v", err)
	}
	s.log.Info("MCP server added", "server", cfg.Name, "file", file)
	view := s.pendingMCPView(cfg.Name)
	for _, v := range s.mcpServerViews() {
		if v.Name == cfg.Name && v.WorkspaceID == "" {
			view = v
		}
	}
	writeJSON(w, http.StatusCreated, view)
	return nil
}

// pendingMCPView is a server $JEAN2_HOME/mcp.json lists that jean2 serve has not started
// yet (it reads the file again every 2 s, mcpclient's watch):
// it was added after the start.
func (s *Server) pendingMCPView(name string) mcpServerView {
	file := s.homeMCPFile()
	v := mcpServerView{Name: name, File: file, State: "not started",
		Error: "listed in " + file + ": jean2 serve reads the file again within a few seconds and connects to it"}
	cfg, _ := mcpclient.Load(file)
	for _, c := range cfg.Servers {
		if c.Name == name {
			v.Type, v.URL = c.Type, c.URL
		}
	}
	return v
}

// notStartedMCP are the views of the servers $JEAN2_HOME/mcp.json lists that are not
// running: added (through the API or by hand) after jean2 serve started.
func (s *Server) notStartedMCP(running []mcpServerView) []mcpServerView {
	cfg, _ := mcpclient.Load(s.homeMCPFile()) // a broken file: the running servers say so
	var out []mcpServerView
	for _, c := range cfg.Servers {
		if !slices.ContainsFunc(running, func(v mcpServerView) bool { return v.WorkspaceID == "" && v.Name == c.Name }) {
			out = append(out, s.pendingMCPView(c.Name))
		}
	}
	return out
}

package server

import (
	"net/http"
	"slices"

	"github.com/jean2/jean2/mcpclient"
	"github.com/jean2/jean2/sandbox"
)

// mcpTrustServer is one server of the file, as the person is shown it.
type mcpTrustServer struct {
	Name    string   `json:"name"`
	Command string   `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
	Cwd     string   `json:"cwd,omitempty"`
	URL     string   `json:"url,omitempty"`
	// Env are the names of the variables it sets (their values are not shown).
	Env []string `json:"env,omitempty"`
	// Network are the hosts it may reach through jean2's proxy (its "network", and npx's or
	// uvx's registry); Abilities says in words what it may do once started (confined).
	Network   []string `json:"network,omitempty"`
	Abilities string   `json:"abilities,omitempty"`
}

// mcpTrustView answers GET /api/workspaces/{id}/mcp-trust: what the workspace's
// .jean2/mcp.json wants to start and whether a person trusted that content.
type mcpTrustView struct {
	WorkspaceID string `json:"workspaceId"`
	File        string `json:"file"`
	// Present is false when the workspace has no mcp.json (nothing to trust).
	Present bool `json:"present"`
	// SHA256 of the content shown; POST it back to trust exactly that.
	SHA256  string `json:"sha256,omitempty"`
	Trusted bool   `json:"trusted"`
	// Commands says what each server starts or reaches ("name: command args", "name: url").
	Commands []string         `json:"commands"`
	Servers  []mcpTrustServer `json:"servers"`
	// Error is why the file cannot be used, if it cannot.
	Error string `json:"error,omitempty"`
	// Confined is false when jean2's sandbox mode is off: then the servers run as the
	// person, whatever their abilities say.
	Confined bool `json:"confined"`
}

func (s *Server) mcpTrustState(r *http.Request) (mcpTrustView, mcpclient.WorkspaceFile, error) {
	ws, err := s.workspace(r.Context(), r.PathValue("id"))
	if err != nil {
		return mcpTrustView{}, mcpclient.WorkspaceFile{}, err
	}
	confined := s.mcpSandbox.Status().Mode != sandbox.ModeOff
	file := mcpclient.ReadWorkspaceFile(ws.Path).UnderSandbox(!confined)
	v := mcpTrustView{WorkspaceID: ws.ID, File: file.Path, Present: file.Present, SHA256: file.SHA256,
		Commands: file.Commands(), Servers: []mcpTrustServer{}, Confined: confined}
	for _, sc := range file.Servers {
		ts := mcpTrustServer{Name: sc.Name, Command: sc.Command, Args: sc.Args, Cwd: sc.Cwd, URL: sc.URL}
		if sc.Type == "stdio" {
			ts.Network, ts.Abilities = sc.Reach(), sc.Abilities()
		}
		for n := range sc.Env {
			ts.Env = append(ts.Env, n)
		}
		slices.Sort(ts.Env)
		v.Servers = append(v.Servers, ts)
	}
	if file.Err != nil {
		v.Error = file.Err.Error()
	}
	if v.Trusted, err = s.wsMCP.trust.Trusted(file); err != nil {
		return v, file, err
	}
	return v, file, nil
}

func (s *Server) getMCPTrust(w http.ResponseWriter, r *http.Request) error {
	v, _, err := s.mcpTrustState(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// postMCPTrust trusts the file's content whose hash the person was shown: a file changed
// since is refused (409), so what starts is what was seen.
func (s *Server) postMCPTrust(w http.ResponseWriter, r *http.Request) error {
	var b struct {
		SHA256 string `json:"sha256"`
	}
	if err := decodeBody(w, r, &b); err != nil {
		return err
	}
	if b.SHA256 == "" {
		return badRequest("give the sha256 of the mcp.json content you trust (from GET …/mcp-trust)")
	}
	v, file, err := s.mcpTrustState(r)
	if err != nil {
		return err
	}
	if !file.Present {
		return notFound("%s does not exist: there is nothing to trust", file.Path)
	}
	if file.SHA256 != b.SHA256 {
		return errorf(http.StatusConflict, codeConflict, "%s changed since it was shown (its sha256 is now %s): look at it again before trusting it", file.Path, file.SHA256)
	}
	if err := s.wsMCP.trust.Set(file); err != nil {
		return err
	}
	s.log.Info("workspace mcp.json trusted", "workspace", v.WorkspaceID, "file", file.Path, "sha256", file.SHA256, "commands", file.Commands())
	s.wsMCP.workspacesChanged()
	v.Trusted = true
	writeJSON(w, http.StatusOK, v)
	return nil
}

// deleteMCPTrust takes the workspace's trust back; its servers stop at the next sync.
func (s *Server) deleteMCPTrust(w http.ResponseWriter, r *http.Request) error {
	ws, err := s.workspace(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	if err := s.wsMCP.trust.Revoke(ws.Path); err != nil {
		return err
	}
	s.wsMCP.workspacesChanged()
	w.WriteHeader(http.StatusNoContent)
	return nil
}

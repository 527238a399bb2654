package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/tool"
)

// toolView is a tool as the API lists it: the host's entry with its definition flattened
// for a client that draws a Run form. Declared variables come with set or missing, never
// their values.
type toolView struct {
	Name         string                `json:"name"`
	Title        string                `json:"title,omitempty"`
	Description  string                `json:"description"`
	Version      string                `json:"version"`
	Hash         string                `json:"hash,omitempty"`
	Kind         string                `json:"kind"`
	Runtime      string                `json:"runtime"`
	Status       string                `json:"status"`
	Error        string                `json:"error,omitempty"`
	Folder       string                `json:"folder,omitempty"`
	Env          []host.EnvStatus      `json:"env"`
	InputSchema  json.RawMessage       `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage       `json:"outputSchema,omitempty"`
	Annotations  *tool.Annotations     `json:"annotations,omitempty"`
	Interactive  bool                  `json:"interactive,omitempty"`
	Timeout      int                   `json:"timeout,omitempty"`
	Capabilities []string              `json:"capabilities,omitempty"`
	Permissions  *host.PermissionState `json:"permissions,omitempty"`
}

func (s *Server) viewTool(e host.Entry) toolView {
	v := toolView{Name: e.Name, Version: e.Version, Hash: e.Hash, Kind: e.Kind, Runtime: e.Runtime, Status: e.Status,
		Error: e.Error, Folder: e.Folder, Env: e.Env}
	if v.Env == nil {
		v.Env = []host.EnvStatus{}
	}
	if d := e.Definition; d != nil {
		v.Title, v.Description, v.InputSchema, v.OutputSchema = d.Title, d.Description, d.InputSchema, d.OutputSchema
		v.Annotations, v.Interactive, v.Timeout, v.Capabilities = d.Annotations, d.Interactive, d.Timeout, d.Capabilities
	}
	if st, ok := s.host.Permissions(e.Name); ok {
		v.Permissions = &st
	}
	return v
}

func (s *Server) listTools(w http.ResponseWriter, r *http.Request) error {
	entries := s.host.Tools()
	out := make([]toolView, 0, len(entries))
	for _, e := range entries {
		out = append(out, s.viewTool(e))
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": out})
	return nil
}

func (s *Server) getTool(w http.ResponseWriter, r *http.Request) error {
	e, ok := s.host.Tool(r.PathValue("name"))
	if !ok {
		return notFound("no tool is named %q (GET /api/tools lists them)", r.PathValue("name"))
	}
	writeJSON(w, http.StatusOK, s.viewTool(e))
	return nil
}

type runBody struct {
	Args        json.RawMessage `json:"args"`
	WorkspaceID string          `json:"workspaceId"`
	SessionID   string          `json:"sessionId"`
}

// runTool runs one tool call outside a turn (the web client's Run form). With a session,
// its asks go to the session's clients (the unattended policy when none is attached) and
// ctx.llm uses the session's model; without one, the unattended policy decides them.
func (s *Server) runTool(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	var b runBody
	if err := decodeBody(w, r, &b); err != nil {
		return err
	}
	if _, ok := s.host.Tool(name); !ok {
		return notFound("no tool is named %q (GET /api/tools lists them)", name)
	}
	if len(b.Args) == 0 || string(b.Args) == "null" {
		b.Args = json.RawMessage(`{}`)
	}
	if !strings.HasPrefix(strings.TrimSpace(string(b.Args)), "{") {
		return badRequest("args must be a JSON object of the tool's inputSchema")
	}
	call := host.Call{Tool: name, Args: b.Args, LLM: s.providers.LLM("", "")}
	wsID := b.WorkspaceID
	if b.SessionID != "" {
		ses, err := s.session(r.Context(), b.SessionID)
		if err != nil {
			return err
		}
		if wsID != "" && wsID != ses.WorkspaceID {
			return badRequest("session %s is in workspace %s, not %s", ses.ID, ses.WorkspaceID, wsID)
		}
		wsID = ses.WorkspaceID
		call.SessionID = ses.ID
		call.LLM = s.providers.LLM(ses.Provider, ses.Model)
	}
	if wsID == "" {
		return badRequest("give workspaceId (or sessionId): the call works in a workspace's folder")
	}
	ws, err := s.workspace(r.Context(), wsID)
	if err != nil {
		return err
	}
	call.Workspace = host.Workspace{ID: ws.ID, Path: ws.Path, Allowed: ws.AllowedPaths}
	call.Asker = s.settings.policy()
	if call.SessionID != "" {
		call.Asker = s.hub.Asker(call.SessionID)
	}
	// The call ends with the request (a client that goes away cancels it) or the server.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	out := s.host.Invoke(ctx, call)
	writeJSON(w, http.StatusOK, out)
	return nil
}

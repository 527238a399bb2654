package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/sandbox"
	"github.com/jean2/jean2/store"
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
	// WorkspaceID and MCPServer name the workspace whose .jean2/mcp.json lists the MCP
	// server the tool comes from; such a tool runs only in that workspace.
	WorkspaceID string `json:"workspaceId,omitempty"`
	MCPServer   string `json:"mcpServer,omitempty"`
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
	if t, ok := s.wsMCP.owner(e.Name); ok {
		v.WorkspaceID, v.MCPServer = t.workspaceID, t.server
	}
	return v
}

// listTools lists the host's tools, then the MCP servers of workspaces that offer none
// now (status error, with why). ?workspaceId= leaves out other workspaces' servers and
// tools: what that workspace's sessions can use.
func (s *Server) listTools(w http.ResponseWriter, r *http.Request) error {
	only := r.URL.Query().Get("workspaceId")
	if only != "" {
		if _, err := s.workspace(r.Context(), only); err != nil {
			return err
		}
	}
	entries := s.host.Tools()
	out := make([]toolView, 0, len(entries))
	for _, e := range entries {
		v := s.viewTool(e)
		if only != "" && v.WorkspaceID != "" && v.WorkspaceID != only {
			continue
		}
		out = append(out, v)
	}
	for _, p := range s.wsMCP.listProblems() {
		if only != "" && p.WorkspaceID != only {
			continue
		}
		v := toolView{Name: p.Source, Kind: "mcp", Runtime: "mcp", Status: host.StatusError, Error: p.Error,
			Env: []host.EnvStatus{}, WorkspaceID: p.WorkspaceID}
		if server, ok := strings.CutPrefix(p.Source, "mcp:"); ok {
			v.MCPServer = server
		}
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": out})
	return nil
}

func (s *Server) getTool(w http.ResponseWriter, r *http.Request) error {
	return s.answerTool(w, r.PathValue("name"))
}

// answerTool answers the tool name as GET /api/tools/{name} does: what the tool routes that
// change a tool's approvals and grants answer too.
func (s *Server) answerTool(w http.ResponseWriter, name string) error {
	e, ok := s.host.Tool(name)
	if !ok {
		return noSuchTool(name)
	}
	writeJSON(w, http.StatusOK, s.viewTool(e))
	return nil
}

func noSuchTool(name string) error {
	return notFound("no tool is named %q (GET /api/tools lists them)", name)
}

// grantBody is POST /api/tools/{name}/grant's: the powers a person gives the tool's serving
// version beyond what it declares, in the words of `jean2 tools approve NAME --grant`
// (sandbox.ParseGrant).
type grantBody struct {
	Grants []string `json:"grants"`
	// Hash is the content hash of the version that was refused (the call's toolHash): a
	// tool changed since is refused with 409. Empty: the serving version.
	Hash string `json:"hash,omitempty"`
}

// grantTool is a person's grant from the web client (a refused call's "Allow" button) or
// the chat's /grant: as `jean2 tools approve NAME --grant`, for the serving version only.
// It answers the tool as GET /api/tools/{name} does, its grants in permissions.granted.
func (s *Server) grantTool(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	var b grantBody
	if err := decodeBody(w, r, &b); err != nil {
		return err
	}
	if _, ok := s.host.Tool(name); !ok {
		return noSuchTool(name)
	}
	if len(b.Grants) == 0 || len(b.Grants) > 32 {
		return badRequest(`give "grants": one to 32 of childProcess, network=HOST, read=PATH, write=PATH, data=TOOL (this request had %d)`, len(b.Grants))
	}
	if b.Hash != "" && !fullHash(b.Hash) {
		return badRequest(`"hash" is the whole content hash (64 hexadecimal digits) of the version that was refused, as the call's toolHash gives it; got %.70q`, b.Hash)
	}
	var p tool.Permissions
	for _, g := range b.Grants {
		if err := sandbox.ParseGrant(g, &p); err != nil {
			return badRequest("%v", err)
		}
	}
	if _, err := s.host.GrantVersion(name, b.Hash, p); errors.Is(err, host.ErrVersionChanged) {
		return errorf(http.StatusConflict, codeConflict, "%v", err)
	} else if err != nil {
		return badRequest("%v", err)
	}
	s.log.Info("tool granted powers beyond its declaration", "tool", name, "grants", b.Grants)
	return s.answerTool(w, name)
}

// approveTool is a person's approval, from the web client, of what the tool's version hash
// declares (the version they were shown): as `jean2 tools approve NAME`, but a tool that
// changed since is refused with 409 rather than approved unseen. It answers the tool.
func (s *Server) approveTool(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	var b struct {
		Hash string `json:"hash"`
	}
	if err := decodeBody(w, r, &b); err != nil {
		return err
	}
	if _, ok := s.host.Tool(name); !ok {
		return noSuchTool(name)
	}
	if !fullHash(b.Hash) {
		return badRequest(`give "hash": the whole content hash (64 hexadecimal digits) of the version whose declaration the person approves, as GET /api/tools/{name} gives it; got %.70q`, b.Hash)
	}
	if _, err := s.host.ApproveVersion(name, b.Hash); errors.Is(err, host.ErrVersionChanged) {
		return errorf(http.StatusConflict, codeConflict, "%v", err)
	} else if err != nil {
		return badRequest("%v", err)
	}
	s.log.Info("tool's declared permissions approved", "tool", name, "hash", b.Hash)
	return s.answerTool(w, name)
}

// fullHash reports whether h is a tool version's whole content hash (sha256, in hex): a
// prefix, as `version` shows it, could name more than one version.
func fullHash(h string) bool {
	if len(h) != sha256.Size*2 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil
}

// revokeTool takes back what a person approved and granted the tool (every version), as
// `jean2 tools approve NAME --revoke` does; the tools page's Revoke. It answers the tool.
func (s *Server) revokeTool(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	if _, ok := s.host.Tool(name); !ok {
		return noSuchTool(name)
	}
	if err := s.host.RevokePermissions(name); err != nil {
		return err
	}
	s.log.Info("tool's approvals and grants taken back", "tool", name)
	return s.answerTool(w, name)
}

type runBody struct {
	Args        json.RawMessage `json:"args"`
	WorkspaceID string          `json:"workspaceId"`
	SessionID   string          `json:"sessionId"`
	// Ref is the client's own name for the run, repeated in its events so the client
	// can tell its run from others (at most 128 characters).
	Ref string `json:"ref"`
}

// Events of a tool run started through the API, on the log of the session named in the
// request, else on the server's log.
const (
	EventRunProgress = "tool.run.progress" // runProgressPayload
	EventRunFinished = "tool.run.finished" // runFinishedPayload
)

type runProgressPayload struct {
	CallID   string        `json:"callId"`
	Tool     string        `json:"tool"`
	Ref      string        `json:"ref,omitempty"`
	Progress tool.Progress `json:"progress"`
}

type runFinishedPayload struct {
	CallID     string `json:"callId"`
	Tool       string `json:"tool"`
	Ref        string `json:"ref,omitempty"`
	Success    bool   `json:"success"`
	Error      string `json:"error,omitempty"`
	DurationMs int64  `json:"durationMs"`
}

// runTool runs one tool call outside a turn (the web client's Run form). With a session,
// its asks go to the session's clients (the unattended policy when none is attached),
// ctx.llm uses the session's model and its progress goes to the session's log; without
// one, the unattended policy decides its asks and its progress goes to the server's log.
func (s *Server) runTool(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	var b runBody
	if err := decodeBody(w, r, &b); err != nil {
		return err
	}
	if _, ok := s.host.Tool(name); !ok {
		return noSuchTool(name)
	}
	if len(b.Args) == 0 || string(b.Args) == "null" {
		b.Args = json.RawMessage(`{}`)
	}
	if !strings.HasPrefix(strings.TrimSpace(string(b.Args)), "{") {
		return badRequest("args must be a JSON object of the tool's inputSchema")
	}
	if len(b.Ref) > 128 || !utf8.ValidString(b.Ref) {
		return badRequest("ref is %d bytes; keep it to 128 characters of UTF-8", len(b.Ref))
	}
	call := host.Call{Tool: name, Args: b.Args, CallID: store.NewID("run_"), LLM: s.providers.LLM("", "")}
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
	// Neither the session nor the workspace may be deleted while the tool runs (see gate);
	// read after entering, so one deleted just before is not found.
	keys := []string{workspaceKey(wsID)}
	if call.SessionID != "" {
		keys = append(keys, sessionKey(call.SessionID))
	}
	defer s.gate.enter(keys...)()
	if call.SessionID != "" {
		if _, err := s.session(r.Context(), call.SessionID); err != nil {
			return err
		}
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
	progress := s.streamRunProgress(call.SessionID, runProgressPayload{CallID: call.CallID, Tool: name, Ref: b.Ref})
	call.Progress = progress.report
	// Scoped: a run in one workspace does not learn another's MCP tools.
	out := (&scopedTools{Host: s.host, w: s.wsMCP}).Invoke(ctx, call)
	progress.finish(runFinishedPayload{CallID: call.CallID, Tool: name, Ref: b.Ref, Success: out.Result.Success,
		Error: out.Result.Error, DurationMs: durationMs(out.Duration)})
	writeJSON(w, http.StatusOK, outcomeView{Outcome: out, DurationMs: durationMs(out.Duration)})
	return nil
}

// runProgressEvery is the least time between two progress events of one run: a tool
// reporting in a tight loop must not turn into a database write per report.
const runProgressEvery = 100 * time.Millisecond

// maxProgressBytes bounds one progress report put on a log; a larger one loses its data.
const maxProgressBytes = 64 << 10

// runProgress publishes a tool run's progress: the latest report at most every
// runProgressEvery, then the run's end. Its goroutine is owned by finish.
type runProgress struct {
	s         *Server
	sessionID string
	base      runProgressPayload

	latest atomic.Pointer[tool.Progress]
	kick   chan struct{} // cap 1: a report waits
	done   chan struct{} // closed by finish
	exited chan struct{} // closed when the goroutine has published the last report
}

func (s *Server) streamRunProgress(sessionID string, base runProgressPayload) *runProgress {
	p := &runProgress{s: s, sessionID: sessionID, base: base,
		kick: make(chan struct{}, 1), done: make(chan struct{}), exited: make(chan struct{})}
	go p.run()
	return p
}

// report is the call's ctx.progress: it keeps the latest report and never blocks the tool.
func (p *runProgress) report(pr tool.Progress) {
	if len(pr.Data) > maxProgressBytes || len(pr.Message) > maxProgressBytes {
		pr.Data = nil
		if len(pr.Message) > maxProgressBytes {
			pr.Message = pr.Message[:maxProgressBytes]
		}
	}
	p.latest.Store(&pr)
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

func (p *runProgress) run() {
	defer close(p.exited)
	for {
		select {
		case <-p.kick:
			p.publishLatest()
			wait := time.NewTimer(runProgressEvery)
			select {
			case <-wait.C:
			case <-p.done:
				wait.Stop()
				p.publishLatest()
				return
			}
		case <-p.done:
			p.publishLatest()
			return
		}
	}
}

func (p *runProgress) publishLatest() {
	if pr := p.latest.Swap(nil); pr != nil {
		ev := p.base
		ev.Progress = *pr
		p.s.publishOn(p.sessionID, EventRunProgress, ev)
	}
}

// finish publishes the last report waiting, then the run's end, and stops the goroutine.
func (p *runProgress) finish(end runFinishedPayload) {
	close(p.done)
	<-p.exited
	p.s.publishOn(p.sessionID, EventRunFinished, end)
}

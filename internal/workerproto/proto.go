// Package workerproto defines the messages of the host ⇄ worker protocol (docs/protocol.md):
// JSON-RPC 2.0, one JSON object per line, host → worker on the worker's fd 3 and worker →
// host on its fd 4. The worker's stdout and stderr are never part of the protocol.
package workerproto

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jean2/jean2/internal/jsonrpc"
	"github.com/jean2/jean2/tool"
)

// Version is the protocol version the host speaks.
const Version = 1

// Host → worker methods.
const (
	MethodInitialize = "initialize" // request: InitializeParams → InitializeResult
	MethodExecute    = "execute"    // request: ExecuteParams → raw ToolResult as the tool returned it
	MethodCancel     = "cancel"     // notification: CancelParams
	MethodShutdown   = "shutdown"   // request: no params → null; the worker exits after answering
	MethodLoad       = "load"       // request: LoadParams → InitializeResult (another module)
	MethodUnload     = "unload"     // notification: UnloadParams
)

// Worker → host methods. Every one carries "callId" in its params (except log lines written
// outside a call).
const (
	MethodFSReadFile       = "fs.readFile"            // FSPathParams{Encoding} → FSData
	MethodFSWriteFile      = "fs.writeFile"           // FSWriteParams → null
	MethodFSAppendFile     = "fs.appendFile"          // FSWriteParams → null
	MethodFSReadDir        = "fs.readDir"             // FSPathParams → []tool.DirEntry
	MethodFSExists         = "fs.exists"              // FSPathParams → bool
	MethodFSStat           = "fs.stat"                // FSPathParams → FSStat
	MethodFSMkdir          = "fs.mkdir"               // FSPathParams{Recursive} → null
	MethodFSRm             = "fs.rm"                  // FSPathParams{Recursive} → null
	MethodFSRename         = "fs.rename"              // FSRenameParams → null
	MethodAsk              = "ask"                    // AskParams → answer JSON
	MethodLLMText          = "llm.generateText"       // LLMParams → string
	MethodLLMStructured    = "llm.generateStructured" // LLMParams → JSON value
	MethodSessionGet       = "session.get"            // SessionParams → value or null
	MethodSessionSet       = "session.set"            // SessionParams → null
	MethodWorkspaceAddPath = "workspace.addPath"      // FSPathParams → WorkspaceResult
	MethodWorkspaceRmPath  = "workspace.removePath"   // FSPathParams → WorkspaceResult
	MethodLog              = "log"                    // notification: LogParams
	MethodProgress         = "progress"               // notification: ProgressParams
	MethodLedgerRecord     = "ledger.record"          // notification: LedgerParams
)

// Error codes beyond JSON-RPC's own.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternal       = -32603
	CodeLoadError      = -32001 // initialize: the module failed to load; data is LoadErrorData
	CodeDenied         = -32002 // the host refused the request by policy; data is ErrorData
	CodeFailed         = -32003 // the request was allowed but failed (ENOENT…); data is ErrorData
	CodeUnknownCall    = -32004 // the callId is not a call in flight
)

// Rules are the pure path rules the worker needs to answer ctx.resolvePath,
// isWithinWorkspace, isSensitivePath and isBlockedPath synchronously. The host checks
// every real operation again; these only make the helpers agree with it.
type Rules struct {
	Blocked   []string          `json:"blocked"`
	Sensitive []string          `json:"sensitive"`
	Home      string            `json:"home"`
	Languages map[string]string `json:"languages"` // file extension (".ts") → language id
	// Sandbox names what confines the worker's own code ("landlock" on Linux, "seatbelt" on
	// macOS; "" for none or Node's permission model), so that the worker can say who refused
	// an EACCES/EPERM (Seatbelt answers every refusal with EPERM).
	Sandbox string `json:"sandbox,omitempty"`
}

// InitializeParams is the first request a worker gets.
type InitializeParams struct {
	ProtocolVersion int    `json:"protocolVersion"`
	Bundle          string `json:"bundle"`  // absolute path of the bundled module
	ToolDir         string `json:"toolDir"` // the tool's folder
	Rules           Rules  `json:"rules"`
	// Module names the module in later execute requests; empty for a worker that loads one
	// module only.
	Module string `json:"module,omitempty"`
}

// LoadParams loads another module (a new version of the tool) into a running worker.
type LoadParams struct {
	Module  string `json:"module"`
	Bundle  string `json:"bundle"`
	ToolDir string `json:"toolDir"`
}

// UnloadParams tells a worker that no call will run a module again.
type UnloadParams struct {
	Module string `json:"module"`
}

// InitializeResult describes the loaded tool.
type InitializeResult struct {
	Definition tool.Definition `json:"definition"`
	Shape      string          `json:"shape"` // "jean2" or "jx"
	Runtime    RuntimeInfo     `json:"runtime"`
	// Warnings are what the worker noticed in the definition that loads yet is most likely
	// a mistake (a field no definition has, such as "timout"). Optional.
	Warnings []string `json:"warnings,omitempty"`
}

// RuntimeInfo names the runtime a worker runs on.
type RuntimeInfo struct {
	Name    string `json:"name"` // node, bun, go
	Version string `json:"version"`
}

// LoadErrorData locates a load failure in the tool's source when it can.
type LoadErrorData struct {
	File   string `json:"file,omitempty"`
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
	Stack  string `json:"stack,omitempty"`
}

// ErrorData carries a Node-style error code (ENOENT, EACCES, EISDIR, ENOTDIR, EEXIST,
// ENOTEMPTY, EPERM) and the path it is about.
type ErrorData struct {
	Code string `json:"code,omitempty"`
	Path string `json:"path,omitempty"`
}

// CallContext is what the worker needs to build ctx for one call.
type CallContext struct {
	SessionID     string            `json:"sessionId"`
	WorkspacePath string            `json:"workspacePath"`
	WorkspaceID   string            `json:"workspaceId,omitempty"`
	AllowedPaths  []string          `json:"allowedPaths"`
	TempDir       string            `json:"tempDir"`
	Env           map[string]string `json:"env"` // only the declared variables
}

// ExecuteParams runs one call.
type ExecuteParams struct {
	CallID  string          `json:"callId"`
	Input   json.RawMessage `json:"input"`
	Context CallContext     `json:"context"`
	Module  string          `json:"module,omitempty"` // the module to run; empty: the one initialize loaded
}

// AppendJSON writes the params as encoding/json would (the same members, in the same
// order, map keys sorted), without reflection: they go out with every call.
func (p ExecuteParams) AppendJSON(buf []byte) ([]byte, error) {
	buf = append(buf, `{"callId":`...)
	buf = jsonrpc.AppendString(buf, p.CallID)
	buf = append(buf, `,"input":`...)
	buf, err := jsonrpc.AppendRaw(buf, p.Input)
	if err != nil {
		return buf, fmt.Errorf("input: %w", err)
	}
	cc := &p.Context
	buf = append(buf, `,"context":{"sessionId":`...)
	buf = jsonrpc.AppendString(buf, cc.SessionID)
	buf = append(buf, `,"workspacePath":`...)
	buf = jsonrpc.AppendString(buf, cc.WorkspacePath)
	if cc.WorkspaceID != "" {
		buf = append(buf, `,"workspaceId":`...)
		buf = jsonrpc.AppendString(buf, cc.WorkspaceID)
	}
	buf = append(buf, `,"allowedPaths":`...)
	buf = appendStrings(buf, cc.AllowedPaths)
	buf = append(buf, `,"tempDir":`...)
	buf = jsonrpc.AppendString(buf, cc.TempDir)
	buf = append(buf, `,"env":`...)
	buf = appendStringMap(buf, cc.Env)
	buf = append(buf, '}')
	if p.Module != "" {
		buf = append(buf, `,"module":`...)
		buf = jsonrpc.AppendString(buf, p.Module)
	}
	return append(buf, '}'), nil
}

func appendStrings(buf []byte, ss []string) []byte {
	if ss == nil {
		return append(buf, "null"...)
	}
	buf = append(buf, '[')
	for i, s := range ss {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = jsonrpc.AppendString(buf, s)
	}
	return append(buf, ']')
}

func appendStringMap(buf []byte, m map[string]string) []byte {
	if m == nil {
		return append(buf, "null"...)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	buf = append(buf, '{')
	for i, k := range keys {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = jsonrpc.AppendString(buf, k)
		buf = append(buf, ':')
		buf = jsonrpc.AppendString(buf, m[k])
	}
	return append(buf, '}')
}

// CancelParams aborts a call's signal.
type CancelParams struct {
	CallID string `json:"callId"`
	Reason string `json:"reason,omitempty"`
}

// FSPathParams names one path.
type FSPathParams struct {
	CallID    string `json:"callId"`
	Path      string `json:"path"`
	Encoding  string `json:"encoding,omitempty"` // readFile: "utf-8" for text, "" or "base64" for bytes
	Recursive bool   `json:"recursive,omitempty"`
}

// FSData is file content: text when Encoding is "utf-8", else base64.
type FSData struct {
	Data     string `json:"data"`
	Encoding string `json:"encoding"`
}

// FSWriteParams writes or appends content.
type FSWriteParams struct {
	CallID   string `json:"callId"`
	Path     string `json:"path"`
	Data     string `json:"data"`
	Encoding string `json:"encoding"` // "utf-8" or "base64"
}

// FSRenameParams renames a path.
type FSRenameParams struct {
	CallID string `json:"callId"`
	From   string `json:"from"`
	To     string `json:"to"`
}

// FSStat is what fs.stat answers; times are milliseconds since the epoch.
type FSStat struct {
	Size        int64 `json:"size"`
	IsDirectory bool  `json:"isDirectory"`
	IsFile      bool  `json:"isFile"`
	ModifiedAt  int64 `json:"modifiedAt"`
	CreatedAt   int64 `json:"createdAt"`
}

// StatOf converts a FileInfo to its wire form.
func StatOf(fi tool.FileInfo) FSStat {
	return FSStat{Size: fi.Size, IsDirectory: fi.IsDirectory, IsFile: fi.IsFile,
		ModifiedAt: fi.ModifiedAt.UnixMilli(), CreatedAt: fi.CreatedAt.UnixMilli()}
}

// FileInfo converts the wire form back.
func (s FSStat) FileInfo() tool.FileInfo {
	return tool.FileInfo{Size: s.Size, IsDirectory: s.IsDirectory, IsFile: s.IsFile,
		ModifiedAt: time.UnixMilli(s.ModifiedAt), CreatedAt: time.UnixMilli(s.CreatedAt)}
}

// AskParams carries one ask.
type AskParams struct {
	CallID string   `json:"callId"`
	Ask    tool.Ask `json:"ask"`
}

// LLMParams carries a model request.
type LLMParams struct {
	CallID  string                 `json:"callId"`
	Request tool.StructuredRequest `json:"request"`
}

// SessionParams reads or writes one session fact.
type SessionParams struct {
	CallID string          `json:"callId"`
	Key    string          `json:"key"`
	Value  json.RawMessage `json:"value,omitempty"`
}

// WorkspaceResult is the call's allowed paths after a change.
type WorkspaceResult struct {
	AllowedPaths []string `json:"allowedPaths"`
}

// LogParams is one log line of a tool.
type LogParams struct {
	CallID  string          `json:"callId,omitempty"`
	Level   string          `json:"level"` // debug, info, warn, error
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// ProgressParams reports progress of a call.
type ProgressParams struct {
	CallID string `json:"callId"`
	tool.Progress
}

// LedgerParams is a change a tool recorded itself (ctx.ledger.record).
type LedgerParams struct {
	CallID string `json:"callId"`
	Path   string `json:"path"`
	Tool   string `json:"tool"`
	Disk   bool   `json:"disk"`
	OK     bool   `json:"ok"`
	Error  string `json:"error,omitempty"`
}

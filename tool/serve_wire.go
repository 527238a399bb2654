package tool

import (
	"encoding/json"
	"time"
)

// The worker side of the host ⇄ worker protocol (docs/protocol.md). Package
// internal/workerproto is the host's copy of these shapes; it imports this package for
// Definition, Ask and the rest, so this package cannot import it back and mirrors the few
// messages it sends and receives here. serve_test.go decodes every message a Go worker
// sends into workerproto's types with unknown fields refused, so the two cannot drift
// apart unnoticed.

const protocolVersion = 1

// Host → worker methods.
const (
	methodInitialize = "initialize"
	methodExecute    = "execute"
	methodCancel     = "cancel"
	methodShutdown   = "shutdown"
)

// Worker → host methods.
const (
	methodFSReadFile       = "fs.readFile"
	methodFSWriteFile      = "fs.writeFile"
	methodFSAppendFile     = "fs.appendFile"
	methodFSReadDir        = "fs.readDir"
	methodFSExists         = "fs.exists"
	methodFSStat           = "fs.stat"
	methodFSMkdir          = "fs.mkdir"
	methodFSRm             = "fs.rm"
	methodFSRename         = "fs.rename"
	methodAsk              = "ask"
	methodLLMText          = "llm.generateText"
	methodLLMStructured    = "llm.generateStructured"
	methodSessionGet       = "session.get"
	methodSessionSet       = "session.set"
	methodWorkspaceAddPath = "workspace.addPath"
	methodWorkspaceRmPath  = "workspace.removePath"
	methodLog              = "log"
	methodProgress         = "progress"
	methodLedgerRecord     = "ledger.record"
)

// Error codes beyond JSON-RPC's own.
const (
	codeInvalidRequest = -32600
	codeInvalidParams  = -32602
	codeInternal       = -32603
	codeLoadError      = -32001
	codeDenied         = -32002
)

type wireRules struct {
	Blocked   []string          `json:"blocked"`
	Sensitive []string          `json:"sensitive"`
	Home      string            `json:"home"`
	Languages map[string]string `json:"languages"`
}

type wireInitialize struct {
	ProtocolVersion int       `json:"protocolVersion"`
	Bundle          string    `json:"bundle"`
	ToolDir         string    `json:"toolDir"`
	Rules           wireRules `json:"rules"`
}

type wireRuntime struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

type wireInitializeResult struct {
	Definition Definition  `json:"definition"`
	Shape      string      `json:"shape"`
	Runtime    wireRuntime `json:"runtime"`
}

type wireLoadError struct {
	File   string `json:"file,omitempty"`
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
	Stack  string `json:"stack,omitempty"`
}

// wireExiting is the error data of a worker that is going away.
type wireExiting struct {
	WorkerExiting bool `json:"workerExiting"`
	NotStarted    bool `json:"notStarted,omitempty"`
}

type wireErrorData struct {
	Code string `json:"code,omitempty"`
	Path string `json:"path,omitempty"`
}

type wireCallContext struct {
	SessionID     string            `json:"sessionId"`
	WorkspacePath string            `json:"workspacePath"`
	WorkspaceID   string            `json:"workspaceId,omitempty"`
	AllowedPaths  []string          `json:"allowedPaths"`
	TempDir       string            `json:"tempDir"`
	Env           map[string]string `json:"env"`
}

type wireExecute struct {
	CallID  string          `json:"callId"`
	Input   json.RawMessage `json:"input"`
	Context wireCallContext `json:"context"`
}

type wireCancel struct {
	CallID string `json:"callId"`
	Reason string `json:"reason,omitempty"`
}

// callId comes first in every worker → host message: the host reads it with a prefix
// check instead of parsing params that may hold megabytes of file content.

type wirePath struct {
	CallID    string `json:"callId"`
	Path      string `json:"path"`
	Encoding  string `json:"encoding,omitempty"`
	Recursive bool   `json:"recursive,omitempty"`
}

type wireData struct {
	Data     string `json:"data"`
	Encoding string `json:"encoding"`
}

type wireWrite struct {
	CallID   string `json:"callId"`
	Path     string `json:"path"`
	Data     string `json:"data"`
	Encoding string `json:"encoding"`
}

type wireRename struct {
	CallID string `json:"callId"`
	From   string `json:"from"`
	To     string `json:"to"`
}

type wireStat struct {
	Size        int64 `json:"size"`
	IsDirectory bool  `json:"isDirectory"`
	IsFile      bool  `json:"isFile"`
	ModifiedAt  int64 `json:"modifiedAt"` // milliseconds since the epoch
	CreatedAt   int64 `json:"createdAt"`
}

func (s wireStat) fileInfo() FileInfo {
	return FileInfo{Size: s.Size, IsDirectory: s.IsDirectory, IsFile: s.IsFile,
		ModifiedAt: time.UnixMilli(s.ModifiedAt), CreatedAt: time.UnixMilli(s.CreatedAt)}
}

type wireAsk struct {
	CallID string `json:"callId"`
	Ask    Ask    `json:"ask"`
}

type wireLLM struct {
	CallID  string            `json:"callId"`
	Request StructuredRequest `json:"request"`
}

type wireSession struct {
	CallID string          `json:"callId"`
	Key    string          `json:"key"`
	Value  json.RawMessage `json:"value,omitempty"`
}

type wireWorkspace struct {
	AllowedPaths []string `json:"allowedPaths"`
}

type wireLog struct {
	CallID  string          `json:"callId,omitempty"`
	Level   string          `json:"level"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

type wireProgress struct {
	CallID string `json:"callId"`
	Progress
}

type wireLedger struct {
	CallID string `json:"callId"`
	Path   string `json:"path"`
	Tool   string `json:"tool"`
	Disk   bool   `json:"disk"`
	OK     bool   `json:"ok"`
	Error  string `json:"error,omitempty"`
}

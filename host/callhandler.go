package host

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jean2/jean2/internal/jsonrpc"
	"github.com/jean2/jean2/internal/workerproto"
	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/runtime/worker"
	"github.com/jean2/jean2/tool"
	"github.com/jean2/jean2/toolfs"
)

// callHandler serves one call's requests from its worker by handing each to the call's
// tool.Context. Every power a worker tool has goes through here, so a JavaScript tool and a
// Go tool compiled into the binary are held to exactly the same rules.
type callHandler struct {
	c *tool.Context
	// limits counts the call's log volume and pending asks; nil counts nothing.
	limits *callLimits
}

// BindStop lets the call's limits stop it (worker.StopBinder).
func (h *callHandler) BindStop(s worker.Stopper) {
	if h.limits != nil {
		h.limits.stop = s
	}
}

func decode[T any](params json.RawMessage) (T, error) {
	var v T
	if err := json.Unmarshal(params, &v); err != nil {
		return v, rpcError(workerproto.CodeInvalidParams, "invalid params: "+err.Error(), nil)
	}
	return v, nil
}

// rpcError is an error with a JSON-RPC code and data, for the worker to rethrow.
func rpcError(code int, msg string, data *workerproto.ErrorData) error {
	if data == nil {
		return jsonrpc.NewError(code, msg, nil)
	}
	return jsonrpc.NewError(code, msg, data)
}

// Handle serves one worker → host request of the call, each power by its own method.
func (h *callHandler) Handle(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case workerproto.MethodFSReadFile:
		return h.readFile(ctx, params)
	case workerproto.MethodFSWriteFile, workerproto.MethodFSAppendFile:
		return h.writeFile(ctx, method, params)
	case workerproto.MethodFSReadDir, workerproto.MethodFSExists, workerproto.MethodFSStat:
		return h.lookUp(ctx, method, params)
	case workerproto.MethodFSMkdir, workerproto.MethodFSRm, workerproto.MethodFSRename:
		return h.changeTree(ctx, method, params)
	case workerproto.MethodAsk:
		return h.ask(ctx, params)
	case workerproto.MethodLLMText, workerproto.MethodLLMStructured:
		return h.generate(ctx, method, params)
	case workerproto.MethodSessionGet, workerproto.MethodSessionSet:
		return h.session(method, params)
	case workerproto.MethodWorkspaceAddPath, workerproto.MethodWorkspaceRmPath:
		return h.workspacePath(ctx, method, params)
	}
	return nil, rpcError(workerproto.CodeMethodNotFound, fmt.Sprintf("method %q is not a context power", method), nil)
}

// readFile reads a file as text when the worker asks for utf-8, else as base64.
func (h *callHandler) readFile(ctx context.Context, params json.RawMessage) (any, error) {
	p, err := decode[workerproto.FSPathParams](params)
	if err != nil {
		return nil, err
	}
	data, err := h.c.FS.ReadFile(ctx, p.Path)
	if err != nil {
		return nil, fsError(err)
	}
	if p.Encoding == "utf-8" || p.Encoding == "utf8" {
		return workerproto.FSData{Data: string(data), Encoding: "utf-8"}, nil
	}
	return workerproto.FSData{Data: base64.StdEncoding.EncodeToString(data), Encoding: "base64"}, nil
}

// writeFile writes or appends to a file.
func (h *callHandler) writeFile(ctx context.Context, method string, params json.RawMessage) (any, error) {
	p, err := decode[workerproto.FSWriteParams](params)
	if err != nil {
		return nil, err
	}
	data, err := wireBytes(p.Data, p.Encoding)
	if err != nil {
		return nil, err
	}
	if method == workerproto.MethodFSWriteFile {
		err = h.c.FS.WriteFile(ctx, p.Path, data)
	} else {
		err = h.c.FS.AppendFile(ctx, p.Path, data)
	}
	return nil, fsError(err)
}

// lookUp serves the file system's questions that change nothing: readDir, exists, stat.
func (h *callHandler) lookUp(ctx context.Context, method string, params json.RawMessage) (any, error) {
	p, err := decode[workerproto.FSPathParams](params)
	if err != nil {
		return nil, err
	}
	switch method {
	case workerproto.MethodFSReadDir:
		entries, err := h.c.FS.ReadDir(ctx, p.Path)
		if err != nil {
			return nil, fsError(err)
		}
		if entries == nil {
			entries = []tool.DirEntry{}
		}
		return entries, nil
	case workerproto.MethodFSExists:
		ok, err := h.c.FS.Exists(ctx, p.Path)
		return ok, fsError(err)
	default:
		fi, err := h.c.FS.Stat(ctx, p.Path)
		if err != nil {
			return nil, fsError(err)
		}
		return workerproto.StatOf(fi), nil
	}
}

// changeTree makes, removes or renames a file or folder.
func (h *callHandler) changeTree(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if method == workerproto.MethodFSRename {
		p, err := decode[workerproto.FSRenameParams](params)
		if err != nil {
			return nil, err
		}
		return nil, fsError(h.c.FS.Rename(ctx, p.From, p.To))
	}
	p, err := decode[workerproto.FSPathParams](params)
	if err != nil {
		return nil, err
	}
	if method == workerproto.MethodFSMkdir {
		return nil, fsError(h.c.FS.Mkdir(ctx, p.Path, p.Recursive))
	}
	return nil, fsError(h.c.FS.Remove(ctx, p.Path, p.Recursive))
}

// ask puts a question to the person, within the call's limit of pending asks.
func (h *callHandler) ask(ctx context.Context, params json.RawMessage) (any, error) {
	p, err := decode[workerproto.AskParams](params)
	if err != nil {
		return nil, err
	}
	done, err := h.limits.askStarted()
	if err != nil {
		return nil, rpcError(workerproto.CodeDenied, err.Error(), nil)
	}
	defer done()
	answer, err := h.c.Asker.Ask(ctx, p.Ask)
	if err != nil {
		return nil, rpcError(workerproto.CodeFailed, err.Error(), nil)
	}
	return answer, nil
}

// generate asks the model for text or for a structured value.
func (h *callHandler) generate(ctx context.Context, method string, params json.RawMessage) (any, error) {
	p, err := decode[workerproto.LLMParams](params)
	if err != nil {
		return nil, err
	}
	var out any
	if method == workerproto.MethodLLMText {
		out, err = h.c.LLM.GenerateText(ctx, p.Request.TextRequest)
	} else {
		out, err = h.c.LLM.GenerateStructured(ctx, p.Request)
	}
	if err != nil {
		return nil, rpcError(workerproto.CodeFailed, err.Error(), nil)
	}
	return out, nil
}

// session gets or sets a value kept for the session.
func (h *callHandler) session(method string, params json.RawMessage) (any, error) {
	p, err := decode[workerproto.SessionParams](params)
	if err != nil {
		return nil, err
	}
	if method == workerproto.MethodSessionGet {
		if v, ok := h.c.Session.Get(p.Key); ok {
			return v, nil
		}
		return nil, nil
	}
	if len(p.Value) == 0 {
		p.Value = json.RawMessage("null")
	}
	if err := h.c.Session.Set(p.Key, p.Value); err != nil {
		return nil, rpcError(workerproto.CodeInvalidParams, err.Error(), nil)
	}
	return nil, nil
}

// workspacePath adds a path to the workspace or takes one out, and answers with the paths
// the call may now use.
func (h *callHandler) workspacePath(ctx context.Context, method string, params json.RawMessage) (any, error) {
	c := h.c
	p, err := decode[workerproto.FSPathParams](params)
	if err != nil {
		return nil, err
	}
	if method == workerproto.MethodWorkspaceAddPath {
		err = c.Workspaces.AddWorkspacePath(ctx, p.Path)
	} else {
		err = c.Workspaces.RemoveWorkspacePath(ctx, p.Path)
	}
	if err != nil {
		return nil, rpcError(workerproto.CodeDenied, err.Error(), nil)
	}
	allowed := c.AllowedPaths
	if p, ok := c.Workspaces.(*callPowers); ok {
		allowed = p.allowed()
	}
	return workerproto.WorkspaceResult{AllowedPaths: allowed}, nil
}

// Notify serves one worker → host notification of the call.
func (h *callHandler) Notify(method string, params json.RawMessage) {
	c := h.c
	switch method {
	case workerproto.MethodLog, workerproto.MethodProgress:
		if !h.limits.logged(len(params)) {
			return
		}
	}
	switch method {
	case workerproto.MethodLog:
		p, err := decode[workerproto.LogParams](params)
		if err != nil {
			return
		}
		var attrs []any // c.Logger already names the tool and the call
		if len(p.Data) > 0 {
			attrs = append(attrs, "data", json.RawMessage(p.Data))
		}
		c.Logger.Log(context.Background(), logLevel(p.Level), p.Message, attrs...)
	case workerproto.MethodProgress:
		p, err := decode[workerproto.ProgressParams](params)
		if err != nil {
			return
		}
		c.Progress(p.Progress)
	case workerproto.MethodLedgerRecord:
		p, err := decode[workerproto.LedgerParams](params)
		if err != nil {
			return
		}
		if p.Tool == "" {
			p.Tool = c.Tool
		}
		// Resolve the path the way the host records its own changes, so one file counts
		// once in "Changed N files" whichever way it was named.
		if p.Disk {
			p.Path = policy.Real(c.ResolvePath(p.Path))
		}
		c.Ledger.Record(tool.Change{Path: p.Path, Tool: p.Tool, CallID: c.CallID, Disk: p.Disk, OK: p.OK, Error: p.Error})
	}
}

func logLevel(s string) slog.Level {
	switch s {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

func wireBytes(data, encoding string) ([]byte, error) {
	switch encoding {
	case "", "utf-8", "utf8":
		return []byte(data), nil
	case "base64":
		b, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			return nil, rpcError(workerproto.CodeInvalidParams, "data is not valid base64: "+err.Error(), nil)
		}
		return b, nil
	}
	return nil, rpcError(workerproto.CodeInvalidParams, fmt.Sprintf("encoding %q is not supported: use utf-8 or base64", encoding), nil)
}

// fsError turns a file system error into one the worker rethrows with err.code set.
func fsError(err error) error {
	if err == nil {
		return nil
	}
	var fe *toolfs.Error
	if errors.As(err, &fe) {
		code := workerproto.CodeFailed
		if fe.Denied {
			code = workerproto.CodeDenied
		}
		return rpcError(code, err.Error(), &workerproto.ErrorData{Code: fe.Code, Path: fe.Path})
	}
	return rpcError(workerproto.CodeFailed, err.Error(), nil)
}

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

// Handle serves one worker → host request of the call.
func (h *callHandler) Handle(ctx context.Context, method string, params json.RawMessage) (any, error) {
	c := h.c
	switch method {
	case workerproto.MethodFSReadFile:
		p, err := decode[workerproto.FSPathParams](params)
		if err != nil {
			return nil, err
		}
		data, err := c.FS.ReadFile(ctx, p.Path)
		if err != nil {
			return nil, fsError(err)
		}
		if p.Encoding == "utf-8" || p.Encoding == "utf8" {
			return workerproto.FSData{Data: string(data), Encoding: "utf-8"}, nil
		}
		return workerproto.FSData{Data: base64.StdEncoding.EncodeToString(data), Encoding: "base64"}, nil
	case workerproto.MethodFSWriteFile, workerproto.MethodFSAppendFile:
		p, err := decode[workerproto.FSWriteParams](params)
		if err != nil {
			return nil, err
		}
		data, err := wireBytes(p.Data, p.Encoding)
		if err != nil {
			return nil, err
		}
		if method == workerproto.MethodFSWriteFile {
			err = c.FS.WriteFile(ctx, p.Path, data)
		} else {
			err = c.FS.AppendFile(ctx, p.Path, data)
		}
		return nil, fsError(err)
	case workerproto.MethodFSReadDir:
		p, err := decode[workerproto.FSPathParams](params)
		if err != nil {
			return nil, err
		}
		entries, err := c.FS.ReadDir(ctx, p.Path)
		if err != nil {
			return nil, fsError(err)
		}
		if entries == nil {
			entries = []tool.DirEntry{}
		}
		return entries, nil
	case workerproto.MethodFSExists:
		p, err := decode[workerproto.FSPathParams](params)
		if err != nil {
			return nil, err
		}
		ok, err := c.FS.Exists(ctx, p.Path)
		return ok, fsError(err)
	case workerproto.MethodFSStat:
		p, err := decode[workerproto.FSPathParams](params)
		if err != nil {
			return nil, err
		}
		fi, err := c.FS.Stat(ctx, p.Path)
		if err != nil {
			return nil, fsError(err)
		}
		return workerproto.StatOf(fi), nil
	case workerproto.MethodFSMkdir, workerproto.MethodFSRm:
		p, err := decode[workerproto.FSPathParams](params)
		if err != nil {
			return nil, err
		}
		if method == workerproto.MethodFSMkdir {
			return nil, fsError(c.FS.Mkdir(ctx, p.Path, p.Recursive))
		}
		return nil, fsError(c.FS.Remove(ctx, p.Path, p.Recursive))
	case workerproto.MethodFSRename:
		p, err := decode[workerproto.FSRenameParams](params)
		if err != nil {
			return nil, err
		}
		return nil, fsError(c.FS.Rename(ctx, p.From, p.To))
	case workerproto.MethodAsk:
		p, err := decode[workerproto.AskParams](params)
		if err != nil {
			return nil, err
		}
		done, err := h.limits.askStarted()
		if err != nil {
			return nil, rpcError(workerproto.CodeDenied, err.Error(), nil)
		}
		defer done()
		answer, err := c.Asker.Ask(ctx, p.Ask)
		if err != nil {
			return nil, rpcError(workerproto.CodeFailed, err.Error(), nil)
		}
		return answer, nil
	case workerproto.MethodLLMText:
		p, err := decode[workerproto.LLMParams](params)
		if err != nil {
			return nil, err
		}
		text, err := c.LLM.GenerateText(ctx, p.Request.TextRequest)
		if err != nil {
			return nil, rpcError(workerproto.CodeFailed, err.Error(), nil)
		}
		return text, nil
	case workerproto.MethodLLMStructured:
		p, err := decode[workerproto.LLMParams](params)
		if err != nil {
			return nil, err
		}
		v, err := c.LLM.GenerateStructured(ctx, p.Request)
		if err != nil {
			return nil, rpcError(workerproto.CodeFailed, err.Error(), nil)
		}
		return v, nil
	case workerproto.MethodSessionGet:
		p, err := decode[workerproto.SessionParams](params)
		if err != nil {
			return nil, err
		}
		if v, ok := c.Session.Get(p.Key); ok {
			return v, nil
		}
		return nil, nil
	case workerproto.MethodSessionSet:
		p, err := decode[workerproto.SessionParams](params)
		if err != nil {
			return nil, err
		}
		if len(p.Value) == 0 {
			p.Value = json.RawMessage("null")
		}
		if err := c.Session.Set(p.Key, p.Value); err != nil {
			return nil, rpcError(workerproto.CodeInvalidParams, err.Error(), nil)
		}
		return nil, nil
	case workerproto.MethodWorkspaceAddPath, workerproto.MethodWorkspaceRmPath:
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
	return nil, rpcError(workerproto.CodeMethodNotFound, fmt.Sprintf("method %q is not a context power", method), nil)
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

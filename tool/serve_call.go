package tool

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sort"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jean2/jean2/internal/jsonrpc"
)

// HostError is a request a Go tool made through its Context that the host refused or could
// not serve: a path outside the workspace, a missing file, a declined permission, a model
// that failed. Its text is the host's own words, the same a JavaScript tool sees.
//
// errors.Is matches fs.ErrNotExist (ENOENT), fs.ErrExist (EEXIST) and fs.ErrPermission
// (EACCES, EPERM, or refused by policy), so code written against package os keeps working.
type HostError struct {
	Method  string // the request: fs.readFile, ask, llm.generateText…
	Message string // what the host said
	// Code is the Node-style code of a file system error (ENOENT, EACCES, EEXIST, ENOTDIR,
	// EISDIR, ENOTEMPTY, EPERM); empty when the host gave none.
	Code string
	Path string // the path the error is about, when the host named one
	// Denied is set when the host's policy refused the request (nothing was attempted).
	Denied  bool
	RPCCode int // the JSON-RPC error code
}

func (e *HostError) Error() string { return e.Message }

// Is reports whether the error means target, for the fs sentinel errors.
func (e *HostError) Is(target error) bool {
	switch target {
	case fs.ErrNotExist:
		return e.Code == "ENOENT"
	case fs.ErrExist:
		return e.Code == "EEXIST"
	case fs.ErrPermission:
		return e.Denied || e.Code == "EACCES" || e.Code == "EPERM"
	}
	return false
}

// hostCall is one call running in a worker: its context, and the powers of its Context,
// each a request or notification to the host that names the call.
type hostCall struct {
	srv    *server
	id     string
	ctx    context.Context
	cancel context.CancelCauseFunc
	c      *Context

	// The Context's ledger and session facts are the SDK's concrete types, which cannot
	// call out when they change. What a tool puts in them is sent to the host before each
	// of its requests, on cancel, and before its result: ledgerSent counts the ledger
	// entries sent, sessionSent holds each fact as last sent.
	ledger      *Ledger
	session     *SessionFacts
	ledgerMu    sync.Mutex
	ledgerSent  int
	sessionMu   sync.Mutex
	sessionSent map[string]string
}

var (
	_ FS             = (*hostCall)(nil)
	_ Asker          = (*hostCall)(nil)
	_ LLM            = (*hostCall)(nil)
	_ WorkspacePaths = (*hostCall)(nil)
	_ SessionStore   = hostSession{}
)

func newHostCall(parent context.Context, s *server, id string, cc wireCallContext, home string) *hostCall {
	hc := &hostCall{srv: s, id: id, ledger: NewLedger(), session: NewSessionFacts(), sessionSent: map[string]string{}}
	hc.ctx, hc.cancel = context.WithCancelCause(parent)
	hc.c = NewContext(Context{
		CallID:       id,
		SessionID:    cc.SessionID,
		WorkspaceID:  cc.WorkspaceID,
		Workspace:    cc.WorkspacePath,
		AllowedPaths: append([]string(nil), cc.AllowedPaths...),
		TempDir:      cc.TempDir,
		Home:         home,
		Tool:         s.def.Name,
		FS:           hc,
		Asker:        hc,
		LLM:          hc,
		Env:          NewEnv(cc.Env),
		Logger:       slog.New(&logHandler{hc: hc}),
		Ledger:       hc.ledger,
		Session:      hc.session,
		Progress:     hc.progress,
		Workspaces:   hc,
	})
	return hc
}

// request sends one request of the call to the host. Whatever the tool put in its ledger or
// session facts goes first, so the host sees things in the order the tool did them.
func (hc *hostCall) request(ctx context.Context, method, path string, params, result any) error {
	if ctx == nil {
		ctx = hc.ctx
	}
	hc.syncLedger()
	hc.syncSession(ctx)
	return hc.call(ctx, method, path, params, result)
}

func (hc *hostCall) call(ctx context.Context, method, path string, params, result any) error {
	err := hc.srv.conn.Call(ctx, method, params, result)
	if err == nil {
		return nil
	}
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		he := &HostError{Method: method, Message: rpcErr.Message, RPCCode: rpcErr.Code, Denied: rpcErr.Code == codeDenied}
		var d wireErrorData
		if rpcErr.DecodeData(&d) {
			he.Code, he.Path = d.Code, d.Path
		}
		if he.Message == "" {
			he.Message = "the host refused the request"
		}
		return he
	}
	what := method
	if path != "" {
		what += " " + path
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", what, context.Cause(ctx))
	}
	if errors.Is(err, jsonrpc.ErrClosed) {
		return fmt.Errorf("%s: the host is gone: %w", what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func (hc *hostCall) notify(method string, params any) {
	if err := hc.srv.conn.Notify(context.Background(), method, params); err != nil {
		hc.srv.log.Debug("jean2 worker: notification not sent", "method", method, "call", hc.id, "err", err)
	}
}

// settle sends what the tool left in its ledger and session facts before its result. The
// call's context may have ended (that is often why it settles), so it is not used here.
func (hc *hostCall) settle() {
	hc.syncLedger()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(hc.ctx), 5*time.Second)
	defer cancel()
	hc.syncSession(ctx)
}

func (hc *hostCall) syncLedger() {
	hc.ledgerMu.Lock()
	defer hc.ledgerMu.Unlock()
	changes := hc.ledger.Changes()
	for ; hc.ledgerSent < len(changes); hc.ledgerSent++ {
		ch := changes[hc.ledgerSent]
		hc.notify(methodLedgerRecord, wireLedger{CallID: hc.id, Path: ch.Path, Tool: ch.Tool, Disk: ch.Disk, OK: ch.OK, Error: ch.Error})
	}
}

// syncSession sends the facts the tool set on c.Session since the last sync. A fact the
// host refuses is logged: the tool made no request it could be told through.
func (hc *hostCall) syncSession(ctx context.Context) {
	hc.sessionMu.Lock()
	defer hc.sessionMu.Unlock()
	snap := hc.session.Snapshot()
	if len(snap) == 0 {
		return
	}
	keys := make([]string, 0, len(snap))
	for k, v := range snap {
		if sent, ok := hc.sessionSent[k]; !ok || sent != string(v) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := snap[k]
		if err := hc.call(ctx, methodSessionSet, "", wireSession{CallID: hc.id, Key: k, Value: v}, nil); err != nil {
			hc.log(slog.LevelWarn, fmt.Sprintf("session fact %q was not stored by the host: %v", k, err))
			continue
		}
		hc.sessionSent[k] = string(v)
	}
}

func (hc *hostCall) log(level slog.Level, msg string) {
	hc.notify(methodLog, wireLog{CallID: hc.id, Level: levelName(level), Message: msg})
}

func (hc *hostCall) progress(p Progress) {
	hc.syncLedger()
	hc.notify(methodProgress, wireProgress{CallID: hc.id, Progress: p})
}

// FS: every operation is a request; the host resolves the path, applies its policy,
// performs the operation and records changes on the turn's ledger.

func (hc *hostCall) ReadFile(ctx context.Context, path string) ([]byte, error) {
	var d wireData
	if err := hc.request(ctx, methodFSReadFile, path, wirePath{CallID: hc.id, Path: path, Encoding: "base64"}, &d); err != nil {
		return nil, err
	}
	if d.Encoding == "utf-8" || d.Encoding == "utf8" {
		return []byte(d.Data), nil
	}
	b, err := base64.StdEncoding.DecodeString(d.Data)
	if err != nil {
		return nil, fmt.Errorf("%s %s: the host sent content that is not base64: %w", methodFSReadFile, path, err)
	}
	return b, nil
}

func (hc *hostCall) WriteFile(ctx context.Context, path string, data []byte) error {
	return hc.request(ctx, methodFSWriteFile, path, writeParams(hc.id, path, data), nil)
}

func (hc *hostCall) AppendFile(ctx context.Context, path string, data []byte) error {
	return hc.request(ctx, methodFSAppendFile, path, writeParams(hc.id, path, data), nil)
}

// writeParams sends text as text (JSON keeps valid UTF-8 exactly) and anything else as
// base64.
func writeParams(id, path string, data []byte) wireWrite {
	if utf8.Valid(data) {
		return wireWrite{CallID: id, Path: path, Data: string(data), Encoding: "utf-8"}
	}
	return wireWrite{CallID: id, Path: path, Data: base64.StdEncoding.EncodeToString(data), Encoding: "base64"}
}

func (hc *hostCall) ReadDir(ctx context.Context, path string) ([]DirEntry, error) {
	var entries []DirEntry
	if err := hc.request(ctx, methodFSReadDir, path, wirePath{CallID: hc.id, Path: path}, &entries); err != nil {
		return nil, err
	}
	if entries == nil {
		entries = []DirEntry{}
	}
	return entries, nil
}

func (hc *hostCall) Exists(ctx context.Context, path string) (bool, error) {
	var ok bool
	err := hc.request(ctx, methodFSExists, path, wirePath{CallID: hc.id, Path: path}, &ok)
	return ok, err
}

func (hc *hostCall) Stat(ctx context.Context, path string) (FileInfo, error) {
	var st wireStat
	if err := hc.request(ctx, methodFSStat, path, wirePath{CallID: hc.id, Path: path}, &st); err != nil {
		return FileInfo{}, err
	}
	return st.fileInfo(), nil
}

func (hc *hostCall) Mkdir(ctx context.Context, path string, recursive bool) error {
	return hc.request(ctx, methodFSMkdir, path, wirePath{CallID: hc.id, Path: path, Recursive: recursive}, nil)
}

func (hc *hostCall) Remove(ctx context.Context, path string, recursive bool) error {
	return hc.request(ctx, methodFSRm, path, wirePath{CallID: hc.id, Path: path, Recursive: recursive}, nil)
}

func (hc *hostCall) Rename(ctx context.Context, from, to string) error {
	return hc.request(ctx, methodFSRename, from, wireRename{CallID: hc.id, From: from, To: to}, nil)
}

// Ask sends the ask to the host, which routes it to a person, a client or a grant.
func (hc *hostCall) Ask(ctx context.Context, a Ask) (json.RawMessage, error) {
	var answer json.RawMessage
	if err := hc.request(ctx, methodAsk, "", wireAsk{CallID: hc.id, Ask: a}, &answer); err != nil {
		return nil, err
	}
	return answer, nil
}

func (hc *hostCall) GenerateText(ctx context.Context, req TextRequest) (string, error) {
	var text string
	err := hc.request(ctx, methodLLMText, "", wireLLM{CallID: hc.id, Request: StructuredRequest{TextRequest: req}}, &text)
	return text, err
}

func (hc *hostCall) GenerateStructured(ctx context.Context, req StructuredRequest) (json.RawMessage, error) {
	var v json.RawMessage
	if err := hc.request(ctx, methodLLMStructured, "", wireLLM{CallID: hc.id, Request: req}, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// AddWorkspacePath asks the host to widen the call's workspace; on success the Context's
// AllowedPaths is what the host now allows. Do not read AllowedPaths from another
// goroutine while this runs.
func (hc *hostCall) AddWorkspacePath(ctx context.Context, path string) error {
	return hc.workspace(ctx, methodWorkspaceAddPath, path)
}

// RemoveWorkspacePath narrows the call's workspace again.
func (hc *hostCall) RemoveWorkspacePath(ctx context.Context, path string) error {
	return hc.workspace(ctx, methodWorkspaceRmPath, path)
}

func (hc *hostCall) workspace(ctx context.Context, method, path string) error {
	var r wireWorkspace
	if err := hc.request(ctx, method, path, wirePath{CallID: hc.id, Path: path}, &r); err != nil {
		return err
	}
	if r.AllowedPaths != nil {
		hc.c.AllowedPaths = append([]string(nil), r.AllowedPaths...)
	}
	return nil
}

func (hc *hostCall) sessionStore() SessionStore { return hostSession{hc} }

// hostSession reads and writes the conversation's facts on the host.
type hostSession struct{ hc *hostCall }

func (s hostSession) Get(ctx context.Context, key string) (json.RawMessage, bool, error) {
	var v json.RawMessage
	if err := s.hc.request(ctx, methodSessionGet, "", wireSession{CallID: s.hc.id, Key: key}, &v); err != nil {
		return nil, false, err
	}
	if len(v) == 0 || string(v) == "null" {
		return nil, false, nil
	}
	return v, true, nil
}

func (s hostSession) Set(ctx context.Context, key string, value json.RawMessage) error {
	if len(value) == 0 {
		value = json.RawMessage("null")
	}
	if !json.Valid(value) {
		return fmt.Errorf("session fact %q: value is not valid JSON", key)
	}
	if ctx == nil {
		ctx = s.hc.ctx
	}
	s.hc.syncLedger()
	s.hc.syncSession(ctx)
	// Held across the request, so a sync cannot send the older local value after it.
	s.hc.sessionMu.Lock()
	defer s.hc.sessionMu.Unlock()
	if err := s.hc.call(ctx, methodSessionSet, "", wireSession{CallID: s.hc.id, Key: key, Value: value}, nil); err != nil {
		return err
	}
	// Keep c.Session in step, without sending it again.
	if s.hc.session.Set(key, value) == nil {
		s.hc.sessionSent[key] = string(value)
	}
	return nil
}

package tool

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/jean2/jean2/policy"
)

// FS is a tool's file system: every path is resolved against the workspace and checked by
// the host before anything happens. Hosts hand tools an implementation that enforces the
// policy and records changes on the ledger (package toolfs).
type FS interface {
	ReadFile(ctx context.Context, path string) ([]byte, error)
	WriteFile(ctx context.Context, path string, data []byte) error
	AppendFile(ctx context.Context, path string, data []byte) error
	ReadDir(ctx context.Context, path string) ([]DirEntry, error)
	Exists(ctx context.Context, path string) (bool, error)
	Stat(ctx context.Context, path string) (FileInfo, error)
	Mkdir(ctx context.Context, path string, recursive bool) error
	Remove(ctx context.Context, path string, recursive bool) error
	Rename(ctx context.Context, from, to string) error
}

// DirEntry is one entry of ReadDir.
type DirEntry struct {
	Name        string `json:"name"`
	IsDirectory bool   `json:"isDirectory"`
	IsFile      bool   `json:"isFile"`
}

// FileInfo is what Stat returns.
type FileInfo struct {
	Size        int64     `json:"size"`
	IsDirectory bool      `json:"isDirectory"`
	IsFile      bool      `json:"isFile"`
	ModifiedAt  time.Time `json:"modifiedAt"`
	CreatedAt   time.Time `json:"createdAt"`
}

// TextRequest asks a model for text (ctx.llm.generateText).
type TextRequest struct {
	Prompt   string `json:"prompt"`
	System   string `json:"system,omitempty"`
	Model    string `json:"model,omitempty"`
	Provider string `json:"provider,omitempty"`
	Image    string `json:"image,omitempty"` // a data: URL (data:image/png;base64,…)
	// Images are more images after Image, as data: URLs: jean2's ctx.llm takes an array.
	Images    []string `json:"images,omitempty"`
	MaxTokens int      `json:"maxTokens,omitempty"`
}

// StructuredRequest asks a model for a JSON value matching Schema (ctx.llm.generateStructured).
type StructuredRequest struct {
	TextRequest
	Schema json.RawMessage `json:"schema"`
}

// LLM is the model a tool may call.
type LLM interface {
	GenerateText(ctx context.Context, req TextRequest) (string, error)
	GenerateStructured(ctx context.Context, req StructuredRequest) (json.RawMessage, error)
}

// ErrNoLLM is what ctx.llm answers until a provider is configured.
var ErrNoLLM = errors.New("no LLM provider is configured: ctx.llm cannot be used until one is set up")

// Progress is one progress report of a long call.
type Progress struct {
	Message string          `json:"message,omitempty"`
	Current float64         `json:"current,omitempty"`
	Total   float64         `json:"total,omitempty"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// WorkspacePaths widens or narrows the workspace's extra allowed paths (jean2's
// addWorkspacePath / removeWorkspacePath). The host decides whether a change is allowed.
type WorkspacePaths interface {
	AddWorkspacePath(ctx context.Context, path string) error
	RemoveWorkspacePath(ctx context.Context, path string) error
}

// Context is everything one call knows about the call it serves. The call's abort signal
// is the context.Context passed beside it. Build one with NewContext, which fills whatever
// is left out with a detached default.
type Context struct {
	CallID       string
	SessionID    string
	WorkspaceID  string
	Workspace    string   // absolute workspace path
	AllowedPaths []string // extra absolute paths besides the workspace
	TempDir      string   // session-scoped temporary folder
	Home         string   // what "~" means in paths
	Tool         string   // the tool's name
	ToolVersion  string   // the tool version's hash

	FS         FS
	Asker      Asker
	LLM        LLM
	Env        Env
	Logger     *slog.Logger
	Ledger     *Ledger
	Session    *SessionFacts
	Progress   func(Progress)
	Workspaces WorkspacePaths
	// Refused are the sensitive files a person refused in this session (real paths), set by
	// the host for built-ins: the shell hides them from its commands as ctx.fs refuses them.
	Refused []string
}

// NewContext returns a copy of partial with detached defaults for what it leaves out: no call
// id, a fresh ledger, empty session facts, a no-op progress, an asker that refuses, no LLM,
// no file system, a discarding logger, the current directory as workspace.
func NewContext(partial Context) *Context {
	c := partial
	if c.Ledger == nil {
		c.Ledger = NewLedger()
	}
	if c.Session == nil {
		c.Session = NewSessionFacts()
	}
	if c.Progress == nil {
		c.Progress = func(Progress) {}
	}
	if c.Asker == nil {
		c.Asker = AskerFunc(func(context.Context, Ask) (json.RawMessage, error) { return nil, ErrNoOneToAsk })
	}
	if c.LLM == nil {
		c.LLM = noLLM{}
	}
	if c.FS == nil {
		c.FS = noFS{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.Workspaces == nil {
		c.Workspaces = fixedWorkspace{}
	}
	if c.Workspace == "" {
		c.Workspace, _ = os.Getwd()
	}
	if c.Home == "" {
		c.Home, _ = os.UserHomeDir()
	}
	if c.TempDir == "" {
		c.TempDir = os.TempDir()
	}
	if c.Env.vars == nil {
		c.Env = NewEnv(nil)
	}
	return &c
}

// Scope is the call's path policy scope.
func (c *Context) Scope() policy.Scope {
	return policy.Scope{Workspace: c.Workspace, Allowed: c.AllowedPaths, Home: c.Home, TempDir: c.TempDir}
}

// ResolvePath resolves p as ctx.resolvePath does: "~" to home, absolute stays, relative
// against the workspace.
func (c *Context) ResolvePath(p string) string { return c.Scope().Resolve(p) }

// IsWithinWorkspace reports whether p lies inside the workspace or an allowed path, with
// symlinks resolved.
func (c *Context) IsWithinWorkspace(p string) bool { return c.Scope().Inside(p) }

// IsSensitivePath reports whether p looks like it holds secrets.
func (c *Context) IsSensitivePath(p string) bool { return policy.IsSensitive(c.ResolvePath(p)) }

// IsBlockedPath reports whether p is a system path no tool may touch.
func (c *Context) IsBlockedPath(p string) bool { return c.Scope().Blocked(p) }

type noLLM struct{}

func (noLLM) GenerateText(context.Context, TextRequest) (string, error) { return "", ErrNoLLM }
func (noLLM) GenerateStructured(context.Context, StructuredRequest) (json.RawMessage, error) {
	return nil, ErrNoLLM
}

// ErrNoFS is what a detached context's file system answers.
var ErrNoFS = errors.New("this call has no file system: the host gave the context none")

type noFS struct{}

func (noFS) ReadFile(context.Context, string) ([]byte, error)    { return nil, ErrNoFS }
func (noFS) WriteFile(context.Context, string, []byte) error     { return ErrNoFS }
func (noFS) AppendFile(context.Context, string, []byte) error    { return ErrNoFS }
func (noFS) ReadDir(context.Context, string) ([]DirEntry, error) { return nil, ErrNoFS }
func (noFS) Exists(context.Context, string) (bool, error)        { return false, ErrNoFS }
func (noFS) Stat(context.Context, string) (FileInfo, error)      { return FileInfo{}, ErrNoFS }
func (noFS) Mkdir(context.Context, string, bool) error           { return ErrNoFS }
func (noFS) Remove(context.Context, string, bool) error          { return ErrNoFS }
func (noFS) Rename(context.Context, string, string) error        { return ErrNoFS }

type fixedWorkspace struct{}

func (fixedWorkspace) AddWorkspacePath(context.Context, string) error {
	return errors.New("this call's workspace cannot be changed: the host gave the context none")
}
func (fixedWorkspace) RemoveWorkspacePath(ctx context.Context, p string) error {
	return fixedWorkspace{}.AddWorkspacePath(ctx, p)
}

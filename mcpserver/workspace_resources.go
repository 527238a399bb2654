package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/tool"
	"github.com/jean2/jean2/toolfs"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The workspace's files as resources, under the template jean2://workspace/{+path} (a
// path relative to the workspace folder jean2 serves). They are read the way a tool's
// ctx.fs reads, with the same policy and nothing more (toolfs with no grants): inside the
// workspace and its allowed paths only, jean2's home, tool folders and the credential
// folders refused, links followed only where they stay inside, a named pipe never waited
// on. Sensitive files (policy.IsSensitive: keys, .env, …), which a tool reads only after a
// person allowed it, are refused outright, since no one is asked here.

// WorkspaceScheme starts the URI of a workspace file.
const WorkspaceScheme = "jean2://workspace/"

// maxResourceRead bounds a resource read from a place a tool's worker writes (a workspace
// file, an overflowing result's file): what a tool's result may be by default. Such a
// file costs its writer nothing (a sparse file), and its answer costs jean2 many times
// its size: a 96 MiB file of NUL bytes, each sent as \u0000, allocated 6.6 GiB in one
// resources/read (TestResourceAttackWorkspaceSizeBomb).
const maxResourceRead = host.DefaultMaxResultBytes

// addWorkspaceTemplate registers the template with the go-sdk server.
func (s *Server) addWorkspaceTemplate() {
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: WorkspaceScheme + "{+path}",
		Name:        "workspace-file",
		Title:       "A file of the workspace",
		Description: "A file of the workspace jean2 serves, by its path relative to the workspace folder, read as a tool's ctx.fs reads it.",
	}, s.readWorkspaceFile)
}

// readWorkspaceFile answers resources/read of a workspace file.
func (s *Server) readWorkspaceFile(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	rel, err := url.PathUnescape(strings.TrimPrefix(uri, WorkspaceScheme))
	if err != nil || rel == "" || filepath.IsAbs(rel) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	fsys, scope := s.workspaceFS("mcp resources/read")
	if sensitive(scope, rel) {
		return nil, fmt.Errorf("resources/read %s: a sensitive file is read only by a tool a person allowed", uri)
	}
	data, err := fsys.ReadFile(ctx, rel)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, mcp.ResourceNotFoundError(uri)
	case err != nil:
		return nil, fmt.Errorf("resources/read %s: %w", uri, err)
	}
	content := &mcp.ResourceContents{URI: uri}
	if utf8.Valid(data) {
		content.MIMEType, content.Text = "text/plain", string(data)
	} else {
		content.MIMEType, content.Blob = "application/octet-stream", data
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{content}}, nil
}

// workspaceFS is the workspace as a tool's ctx.fs sees it, with no grants: op names the
// MCP request in the errors it gives.
func (s *Server) workspaceFS(op string) (*toolfs.FS, policy.Scope) {
	ws := s.serving.Load().workspace
	scope := policy.Scope{Workspace: ws.Path, Allowed: ws.Allowed, Home: userHome()}
	opts := toolfs.Options{Scope: scope, Tool: op, ReadOnly: scope.SettingsDirs(), MaxReadBytes: maxResourceRead}
	if lh, ok := s.h.(layoutHost); ok {
		l := lh.Layout()
		opts.Protected = policy.ProtectedPaths(scope.Home, l.Home, l.Tools)
	}
	return toolfs.New(opts), scope
}

// sensitive reports whether rel (relative to the workspace) names a sensitive file, as
// written or where its links lead.
func sensitive(scope policy.Scope, rel string) bool {
	full := scope.Resolve(rel)
	return policy.IsSensitive(full) || policy.IsSensitive(policy.Real(full))
}

// userHome is the home folder paths like ~/x resolve against; "" when there is none.
func userHome() string {
	h, _ := os.UserHomeDir()
	return h
}

// subscribe accepts a subscription to one of jean2's resources (the go-sdk keeps it per
// session); a URI jean2 offers nothing under is refused, since nothing would ever come of it.
func (s *Server) subscribe(_ context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	if !strings.HasPrefix(uri, WorkspaceScheme) && !strings.HasPrefix(uri, OverflowScheme) && !s.offersAuthored(uri) {
		return mcp.ResourceNotFoundError(uri)
	}
	return nil
}

func unsubscribe(context.Context, *mcp.UnsubscribeRequest) error { return nil }

// notifyChanged tells the subscribers of each workspace file a call changed on disk that it
// was updated. Only changes jean2 records are seen (ctx.fs and jean2's file tools, through
// the call's ledger); a file changed by other means (a shell command, an editor) is not.
func (s *Server) notifyChanged(ctx context.Context, ws string, ledger *tool.Ledger) {
	seen := map[string]bool{}
	for _, c := range ledger.Changes() {
		rel, err := filepath.Rel(ws, c.Path)
		if !c.Disk || err != nil || rel == ".." || strings.HasPrefix(rel, "../") || seen[rel] {
			continue
		}
		seen[rel] = true
		_ = s.mcp.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: WorkspaceURI(rel)})
	}
}

// WorkspaceURI is the resource URI of a path relative to the workspace folder.
func WorkspaceURI(rel string) string {
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return WorkspaceScheme + strings.Join(parts, "/")
}

package mcpserver

import (
	"context"
	"path"
	"strings"

	"github.com/jean2/jean2/skills"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// completion/complete: what a client may offer a person filling in a prompt's argument or
// the workspace template's {+path}.
//
//   - a skill's argument with values (jean2's described arguments): those starting with
//     what was typed;
//   - a skill's argument named like a path (path, file, dir, …) and the template's path:
//     the workspace's entries under the folder typed so far whose names start with the rest,
//     listed as a tool's ctx.fs lists them (same policy, no grants), sensitive files left
//     out, folders ending in "/", at most maxCompletions;
//   - anything else: no values.

// promptArguments are the arguments of the prompt named name: a skill's, else a saved
// prompt's.
func (s *Server) promptArguments(name string) ([]skills.Argument, bool) {
	if sk, ok := s.skillSet().Find(name); ok && forPeople(sk) {
		return sk.Arguments, true
	}
	s.prompts.mu.Lock()
	defer s.prompts.mu.Unlock()
	pf, ok := s.prompts.saved[name]
	return pf.Arguments, ok
}

// maxCompletions is MCP's cap on the values of one answer.
const maxCompletions = 100

// pathArguments are the argument names whose values are workspace paths.
var pathArguments = map[string]bool{
	"path": true, "file": true, "filename": true, "filepath": true, "file_path": true,
	"dir": true, "folder": true, "directory": true,
}

func (s *Server) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	p := req.Params
	arg, typed := p.Argument.Name, p.Argument.Value
	var values []string
	switch p.Ref.Type {
	case "ref/prompt":
		args, ok := s.promptArguments(p.Ref.Name)
		if !ok {
			return nil, invalidParams("completion/complete: there is no prompt named %q", p.Ref.Name)
		}
		for _, a := range args {
			if a.Name == arg && len(a.Values) > 0 {
				values = withPrefix(a.Values, typed)
			}
		}
		if values == nil && pathArguments[strings.ToLower(arg)] {
			values = s.completePath(ctx, typed)
		}
	case "ref/resource":
		if p.Ref.URI != WorkspaceScheme+"{+path}" {
			return nil, invalidParams("completion/complete: there is no resource template %q", p.Ref.URI)
		}
		if arg == "path" {
			values = s.completePath(ctx, typed)
		}
	default:
		return nil, invalidParams("completion/complete: a reference of type %q names nothing jean2 offers", p.Ref.Type)
	}
	return completion(values), nil
}

// completion caps values at maxCompletions, saying how many there were.
func completion(values []string) *mcp.CompleteResult {
	res := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}
	if len(values) > maxCompletions {
		res.Completion.HasMore = true
		values = values[:maxCompletions]
	}
	res.Completion.Values = append(res.Completion.Values, values...)
	res.Completion.Total = len(res.Completion.Values)
	if res.Completion.HasMore {
		res.Completion.Total = 0 // unknown beyond the cap: the listing stopped there
	}
	return res
}

func withPrefix(values []string, typed string) []string {
	out := []string{}
	for _, v := range values {
		if strings.HasPrefix(strings.ToLower(v), strings.ToLower(typed)) {
			out = append(out, v)
		}
	}
	return out
}

// completePath lists the workspace paths that start with typed (a path relative to the
// workspace, "/" between names). A path that climbs out (..) or starts at the root gets
// nothing; the listing itself refuses what ctx.fs refuses.
func (s *Server) completePath(ctx context.Context, typed string) []string {
	dir, base := path.Split(typed)
	if strings.HasPrefix(typed, "/") || strings.Contains(typed, "\\") || strings.ContainsRune(typed, 0) {
		return []string{}
	}
	for _, part := range strings.Split(dir, "/") {
		if part == ".." {
			return []string{}
		}
	}
	fsys, scope := s.workspaceFS("mcp completion/complete")
	listed := dir
	if listed == "" {
		listed = "."
	}
	entries, err := fsys.ReadDir(ctx, listed)
	if err != nil {
		s.log.Debug("completion: a folder of the workspace could not be listed", "dir", listed, "err", err)
		return []string{}
	}
	out := []string{}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name, base) || (strings.HasPrefix(e.Name, ".") && !strings.HasPrefix(base, ".")) {
			continue
		}
		rel := dir + e.Name
		if sensitive(scope, rel) {
			continue
		}
		if e.IsDirectory {
			rel += "/"
		}
		out = append(out, rel)
		if len(out) > maxCompletions {
			break // one more than the cap: enough to say there are more
		}
	}
	return out
}

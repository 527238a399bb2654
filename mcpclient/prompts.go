package mcpclient

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The prompts of the servers jean2 imports. A server's prompts are listed when it connects
// and again when it says they changed (notifications/prompts/list_changed), and jean2's own
// MCP server offers them beside its skills under the servers' qualified names
// (mcp__SERVER__PROMPT, as the tools), getting them from the server on prompts/get.

// promptSubs are the functions told when an imported server's prompts may have changed.
type promptSubs struct {
	mu   sync.Mutex
	next int
	subs map[int]func()
}

// OnPromptsChange calls f (on a goroutine of its own) whenever a server's prompts may have
// changed: it connected, went away, or said its list changed. stop ends that.
func (m *Manager) OnPromptsChange(f func()) (stop func()) {
	p := &m.prompts
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.subs == nil {
		p.subs = map[int]func(){}
	}
	id := p.next
	p.next++
	p.subs[id] = f
	return func() {
		p.mu.Lock()
		delete(p.subs, id)
		p.mu.Unlock()
	}
}

// notifyPrompts tells the subscribers.
func (m *Manager) notifyPrompts() {
	m.prompts.mu.Lock()
	subs := make([]func(), 0, len(m.prompts.subs))
	for _, f := range m.prompts.subs {
		subs = append(subs, f)
	}
	m.prompts.mu.Unlock()
	for _, f := range subs {
		go f()
	}
}

// ImportedPrompts are the prompts of the connected servers, each under its qualified name.
func (m *Manager) ImportedPrompts() []*mcp.Prompt {
	var out []*mcp.Prompt
	for _, s := range m.Servers() {
		for _, p := range s.Prompts() {
			q := *p
			q.Name = QualifiedName(s.cfg.Name, p.Name)
			out = append(out, &q)
		}
	}
	return out
}

// GetImportedPrompt gets the prompt offered under a qualified name from its server.
func (m *Manager) GetImportedPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	for _, s := range m.Servers() {
		for _, p := range s.Prompts() {
			if QualifiedName(s.cfg.Name, p.Name) == name {
				return s.GetPrompt(ctx, p.Name, args)
			}
		}
	}
	return nil, fmt.Errorf("no imported MCP server offers the prompt %s", name)
}

// Prompts are the prompts the server offers now (none while it is not connected).
func (s *Server) Prompts() []*mcp.Prompt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.prompts
}

// GetPrompt gets one of the server's prompts, by the server's own name for it.
func (s *Server) GetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	s.mu.Lock()
	cs := s.session
	s.mu.Unlock()
	if cs == nil {
		return nil, fmt.Errorf("MCP server %s is not connected", s.cfg.Name)
	}
	res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("MCP server %s: prompts/get %s: %w", s.cfg.Name, name, err)
	}
	return res, nil
}

// listPrompts lists a server's prompts, none when it declares no prompts capability.
func (s *Server) listPrompts(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Prompt, error) {
	if r := cs.InitializeResult(); r == nil || r.Capabilities == nil || r.Capabilities.Prompts == nil {
		return nil, nil
	}
	out, err := listAll(cs.Prompts(ctx, nil), "prompts")
	if err != nil {
		return nil, fmt.Errorf("MCP server %s: prompts/list: %w", s.cfg.Name, err)
	}
	return out, nil
}

// refreshPrompts lists the prompts again after the server said they changed (one at a
// time: promptsRelist).
func (s *Server) refreshPrompts() {
	if relist(s, "prompts", s.listPrompts, func(p []*mcp.Prompt) { s.prompts = p }) && s.promptsChanged != nil {
		s.promptsChanged()
	}
}

// relist lists what (tools, prompts) again on the server's session and keeps the list with
// keep (called under s.mu) while that session is still the server's. It reports whether
// the listing succeeded.
func relist[T any](s *Server, what string, list func(context.Context, *mcp.ClientSession) (T, error), keep func(T)) bool {
	s.mu.Lock()
	cs := s.session
	s.mu.Unlock()
	if cs == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	got, err := list(ctx, cs)
	if err != nil {
		s.log.Warn("MCP server "+what+" not refreshed", "server", s.cfg.Name, "error", err)
		return false
	}
	s.mu.Lock()
	if s.session == cs {
		keep(got)
	}
	s.mu.Unlock()
	return true
}

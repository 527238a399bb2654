package mcpserver

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"time"

	"github.com/jean2/jean2/skills"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// jean2's skills as MCP prompts. A skill is a person's instructions for a task; an MCP
// prompt is what a person picks in a client (a slash command) to start one, so each skill
// a person may invoke — usable (not broken, not replaced by a workspace's of the same name)
// and not hidden from people (user-invocable: false) — is a prompt of the same name, whose
// prompts/get is the skill's body with the arguments substituted (skills.Expand), as one
// user message. Skills for people only (disable-model-invocation) are prompts too.
//
// The skills are read again before each prompts/list, prompts/get and completion/complete,
// and every DefaultPromptPoll while the server runs, so a skill saved now is a prompt at
// once and a client that listens hears notifications/prompts/list_changed. (Polling the
// front matter of a few skills costs less than watching every skill's folder.)

// DefaultPromptPoll is how often the skills are read again for prompts/list_changed.
const DefaultPromptPoll = 2 * time.Second

// rawArgument is the one argument of a skill that declares an argument-hint but no names:
// everything a person would type after /name.
const rawArgument = "arguments"

// promptSet is the prompts listed now, by name, each as the JSON listed, so a scan sends
// only changes.
type promptSet struct {
	// syncing is held by a whole syncPrompts, so a scan that started earlier never applies
	// its older list after a later one.
	syncing sync.Mutex
	mu      sync.Mutex
	listed  map[string]string
	saved   map[string]promptFile // the saved prompts, for completion
	broken  map[string]string     // saved prompt files left out, and why
}

// skillsHome is $JEAN2_HOME, whose skills folder every workspace has; "" for a host that
// says nothing of its folders (then only the workspace's skills are offered).
func (s *Server) skillsHome() string {
	if lh, ok := s.h.(layoutHost); ok {
		return lh.Layout().Home
	}
	return ""
}

// skillSet is the skills of the workspace served now.
func (s *Server) skillSet() skills.Set {
	return skills.Scan(s.skillsHome(), s.serving.Load().workspace.Path)
}

// forPeople reports whether a skill is offered as a prompt.
func forPeople(sk skills.Skill) bool { return sk.Usable() && !sk.Hidden }

// promptOffer is one prompt to list: as listed, the key that tells a change, its handler.
type promptOffer struct {
	p   *mcp.Prompt
	key string
	h   mcp.PromptHandler
}

// syncPrompts makes the listed prompts match the skills, the saved prompts and the imported
// ones; the go-sdk sends notifications/prompts/list_changed after a change.
func (s *Server) syncPrompts() {
	s.prompts.syncing.Lock()
	defer s.prompts.syncing.Unlock()
	offers := map[string]promptOffer{}
	for _, sk := range s.skillSet().Skills {
		if forPeople(sk) {
			p := promptOf(sk)
			key, _ := json.Marshal(p)
			offers[p.Name] = promptOffer{p, string(key), s.getPrompt}
		}
	}
	saved := map[string]promptFile{}
	if home := s.skillsHome(); home != "" {
		files, broken := readPromptFiles(home)
		for name, pf := range files {
			if _, skill := offers[name]; skill {
				broken[pf.file] = "a skill of the same name is the prompt"
				continue
			}
			key, _ := json.Marshal(pf)
			offers[name] = promptOffer{savedPrompt(pf), string(key), getSaved(filepath.Join(home, promptsDir), pf)}
			saved[name] = pf
		}
		s.logBrokenPrompts(home, broken)
	}
	s.importedOffers(offers)
	s.prompts.mu.Lock()
	defer s.prompts.mu.Unlock()
	s.prompts.saved = saved
	for name, o := range offers {
		if s.prompts.listed[name] != o.key {
			s.prompts.listed[name] = o.key
			s.mcp.AddPrompt(o.p, o.h)
		}
	}
	var gone []string
	for name := range s.prompts.listed {
		if _, ok := offers[name]; !ok {
			gone = append(gone, name)
			delete(s.prompts.listed, name)
		}
	}
	if len(gone) > 0 {
		s.mcp.RemovePrompts(gone...)
	}
}

// logBrokenPrompts logs each saved prompt file left out, once per reason.
func (s *Server) logBrokenPrompts(home string, broken map[string]string) {
	s.prompts.mu.Lock()
	defer s.prompts.mu.Unlock()
	for name, why := range broken {
		if s.prompts.broken[name] != why {
			s.log.Warn("a saved prompt is not offered", "file", filepath.Join(home, promptsDir, name), "err", why)
		}
	}
	s.prompts.broken = broken
}

// promptOf is a skill as prompts/list shows it: its declared arguments, or one argument
// for all of them when it gives only an argument-hint.
func promptOf(sk skills.Skill) *mcp.Prompt {
	p := &mcp.Prompt{Name: sk.Name, Description: sk.Description}
	for _, a := range sk.Arguments {
		p.Arguments = append(p.Arguments, promptArgument(a))
	}
	if len(sk.Arguments) == 0 && sk.ArgumentHint != "" {
		p.Arguments = []*mcp.PromptArgument{{Name: rawArgument, Description: "What to pass to the skill, as one would type it after /" + sk.Name + ": " + sk.ArgumentHint}}
	}
	return p
}

// getPrompt answers prompts/get of a skill.
func (s *Server) getPrompt(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	name := req.Params.Name
	sk, body, err := skills.ForPerson(s.skillsHome(), s.serving.Load().workspace.Path, name)
	if err != nil {
		return nil, invalidParams("prompts/get %s: %v", name, err)
	}
	given, questions, err := askArguments(name, sk.Arguments, req)
	if err != nil {
		return nil, err
	}
	if questions != nil {
		return &mcp.GetPromptResult{InputRequests: questions}, nil
	}
	for _, a := range sk.Arguments {
		if a.Required && given[a.Name] == "" {
			return nil, invalidParams("prompts/get %s: the argument %q is required", name, a.Name)
		}
	}
	raw := ""
	if len(sk.Arguments) == 0 {
		raw = given[rawArgument]
	}
	return &mcp.GetPromptResult{
		Description: sk.Description,
		Messages: []*mcp.PromptMessage{{
			Role:    "user",
			Content: &mcp.TextContent{Text: skills.Expand(body, sk.Arguments, given, raw)},
		}},
	}, nil
}

// promptsMiddleware reads the skills again before a request that shows them, so a client
// never sees a prompt list older than the folders.
func (s *Server) promptsMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "prompts/list", "prompts/get", "completion/complete":
			s.syncPrompts()
		case "resources/list", "resources/read", "resources/templates/list", "resources/subscribe":
			s.syncResources(ctx)
		}
		return next(ctx, method, req)
	}
}

// pollPrompts reads the skills every interval until the server closes.
func (s *Server) pollPrompts(interval time.Duration) {
	if interval < 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.syncPrompts()
			s.syncResources(context.Background())
		case <-s.done:
			return
		}
	}
}

package harness

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/tool"
)

// Built-in agents. A session whose agent is "" runs DefaultAgent.
const (
	// DefaultAgent is the agent of today's behaviour: every tool, no extra instructions.
	DefaultAgent = "build"
	// PlanAgent is the read-only agent: only tools marked read-only (annotations
	// readOnlyHint) are offered, and the host refuses any other call whatever the model
	// asks.
	PlanAgent = "plan"
)

// Where agent files live, relative to $JEAN2_HOME and to a workspace folder. The
// workspace's .claude/agents is read too, so Claude Code's agent files work as they are;
// .jean2/agents has the last word.
const (
	AgentsDir       = "agents"
	WorkspaceAgents = ".jean2/agents"
	ClaudeAgents    = ".claude/agents"
	// MaxAgentBytes bounds one agent file; MaxAgentFiles the files read per folder.
	MaxAgentBytes = MaxInstructionBytes
	MaxAgentFiles = 200
)

// ErrNoAgent is wrapped by the errors of a turn whose session's agent cannot be used: it is
// not defined (its file was removed or is broken) or its model cannot be had. The turn does
// not start, rather than run with other powers than the person chose.
var ErrNoAgent = errors.New("the session's agent cannot be used")

// Agent is a named preset a session runs with: instructions joined to the system prompt,
// the tools it may use, a model, and whether it is read-only (plan mode).
type Agent struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Instructions are the file's body, added to the system prompt.
	Instructions string `json:"instructions,omitempty"`
	// Tools are the only tools the agent may use; nil means every tool offered.
	Tools []string `json:"tools"`
	// DisallowedTools are never offered nor run.
	DisallowedTools []string `json:"disallowedTools,omitempty"`
	// Model replaces the session's model (of the session's provider); "" keeps it.
	Model string `json:"model,omitempty"`
	// ReadOnly is plan mode: only read-only tools are offered or run.
	ReadOnly bool `json:"readOnly"`
	// Scope is where it comes from: "builtin", "home" or "workspace"; Path its file.
	Scope string `json:"scope"`
	Path  string `json:"path,omitempty"`
	// Warnings are what of the file was not taken (a field jean2 does not honour).
	Warnings []string `json:"warnings,omitempty"`
}

// AgentProblem is an agent file that could not be loaded, and why. The other files load.
type AgentProblem struct {
	Path  string `json:"path"`
	Scope string `json:"scope"`
	Error string `json:"error"`
}

// Agents are the agents a workspace's sessions may choose from, built-ins first, and the
// files that were refused.
type Agents struct {
	Agents   []Agent        `json:"agents"`
	Problems []AgentProblem `json:"problems"`
}

// Lookup finds an agent by name; "" is DefaultAgent.
func (a Agents) Lookup(name string) (Agent, bool) {
	if name == "" {
		name = DefaultAgent
	}
	for _, ag := range a.Agents {
		if ag.Name == name {
			return ag, true
		}
	}
	return Agent{}, false
}

// Names lists the agents' names, in order.
func (a Agents) Names() []string {
	out := make([]string, len(a.Agents))
	for i, ag := range a.Agents {
		out[i] = ag.Name
	}
	return out
}

// builtinAgents are the agents every workspace has.
func builtinAgents() []Agent {
	return []Agent{
		{Name: DefaultAgent, Scope: "builtin", Description: "Does the work: every tool, edits and commands included."},
		{Name: PlanAgent, Scope: "builtin", ReadOnly: true,
			Description:  "Plans without changing anything: only read-only tools; edits and commands are refused.",
			Instructions: planInstructions},
	}
}

const planInstructions = `You are in plan mode. Study the code with the read-only tools you are offered and answer with a plan: what to change, where and why, in steps the person can check. Do not try to change files or run commands: such calls are refused by the host in this mode. When the plan is agreed, the person switches to the build agent to carry it out.`

// LoadAgents reads the agents of a workspace: the built-ins, then $JEAN2_HOME/agents/*.md,
// the workspace's .claude/agents/*.md and .jean2/agents/*.md; a later file of the same name
// replaces an earlier one. A file that cannot be read or parsed is listed in Problems and
// left out; it never fails. Files are read anew at each call, so a saved file counts at
// the next turn.
func LoadAgents(home, workspace string) Agents {
	out := Agents{Agents: builtinAgents(), Problems: []AgentProblem{}}
	if home != "" {
		out.readDir(home, AgentsDir, "home")
	}
	if workspace != "" {
		out.readDir(workspace, ClaudeAgents, "workspace")
		out.readDir(workspace, WorkspaceAgents, "workspace")
	}
	return out
}

// readDir loads root/dir/*.md, in name order.
func (a *Agents) readDir(root, dir, scope string) {
	entries, err := os.ReadDir(filepath.Join(root, dir))
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			a.Problems = append(a.Problems, AgentProblem{Path: filepath.Join(root, dir), Scope: scope, Error: err.Error()})
		}
		return
	}
	n := 0
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".md") {
			continue
		}
		if n++; n > MaxAgentFiles {
			a.Problems = append(a.Problems, AgentProblem{Path: filepath.Join(root, dir), Scope: scope,
				Error: fmt.Sprintf("more than %d agent files: the rest were not read", MaxAgentFiles)})
			return
		}
		a.readFile(root, filepath.Join(dir, e.Name()), scope)
	}
}

// readFile loads one agent file, through the same confined read as the instruction files
// (a symlink out of root is refused).
func (a *Agents) readFile(root, rel, scope string) {
	path := filepath.Join(root, rel)
	fail := func(format string, args ...any) {
		a.Problems = append(a.Problems, AgentProblem{Path: path, Scope: scope, Error: fmt.Sprintf(format, args...)})
	}
	f := readInstructionFile(root, rel, scope, MaxAgentBytes)
	switch {
	case f == nil:
		return
	case f.Error != "":
		fail("%s", f.Error)
		return
	case f.Truncated:
		fail("the file is longer than %d KiB", MaxAgentBytes>>10)
		return
	}
	ag, disabled, err := parseAgent(f.text, strings.TrimSuffix(filepath.Base(rel), ".md"))
	if err != nil {
		fail("%v", err)
		return
	}
	if disabled {
		return
	}
	ag.Scope, ag.Path = scope, path
	if i := slices.IndexFunc(a.Agents, func(x Agent) bool { return x.Name == ag.Name }); i >= 0 {
		if a.Agents[i].Scope == "builtin" {
			fail("%q is a built-in agent's name; give the file another name", ag.Name)
			return
		}
		a.Agents[i] = ag // the nearer file has the last word
		return
	}
	a.Agents = append(a.Agents, ag)
}

// agentFront is the front matter of an agent file: Claude Code's subagent fields (name,
// description, tools, disallowedTools, model, permissionMode, disabled); others are
// ignored.
type agentFront struct {
	Name            string `yaml:"name"`
	Description     string `yaml:"description"`
	Tools           any    `yaml:"tools"`
	DisallowedTools any    `yaml:"disallowedTools"`
	Model           string `yaml:"model"`
	PermissionMode  string `yaml:"permissionMode"`
	Disabled        bool   `yaml:"disabled"`
}

var agentNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// parseAgent reads an agent file: YAML front matter between --- lines, then the
// instructions. stem names an agent whose front matter has no name.
func parseAgent(text, stem string) (ag Agent, disabled bool, err error) {
	front, body, err := splitFrontMatter(text)
	if err != nil {
		return Agent{}, false, err
	}
	var fm agentFront
	if err := yaml.Unmarshal([]byte(front), &fm); err != nil {
		return Agent{}, false, fmt.Errorf("front matter: %v", err)
	}
	ag = Agent{Name: strings.TrimSpace(fm.Name), Description: strings.TrimSpace(fm.Description), Instructions: strings.TrimSpace(body)}
	if ag.Name == "" {
		ag.Name = stem
	}
	if !agentNamePattern.MatchString(ag.Name) {
		return Agent{}, false, fmt.Errorf("name %q: use letters, digits, '-', '_' or '.', at most 64", ag.Name)
	}
	switch ag.Model = strings.TrimSpace(fm.Model); ag.Model {
	case "inherit":
		ag.Model = ""
	case "sonnet", "opus", "haiku":
		// Claude Code's aliases name no model of a jean2 provider.
		ag.Warnings = append(ag.Warnings, fmt.Sprintf("model %q is Claude Code's alias, not a model's name: the session's model is used", ag.Model))
		ag.Model = ""
	}
	if ag.Tools, err = toolList(fm.Tools, "tools", &ag.Warnings); err != nil {
		return Agent{}, false, err
	}
	if ag.DisallowedTools, err = toolList(fm.DisallowedTools, "disallowedTools", &ag.Warnings); err != nil {
		return Agent{}, false, err
	}
	switch mode := strings.TrimSpace(fm.PermissionMode); mode {
	case "", "default":
	case "plan":
		ag.ReadOnly = true
	default:
		// Agent files never widen what the policy allows.
		ag.Warnings = append(ag.Warnings, fmt.Sprintf("permissionMode %q is not honoured: asks follow jean2's policy", mode))
	}
	return ag, fm.Disabled, nil
}

// splitFrontMatter cuts "---\n<yaml>\n---\n<body>"; a file without front matter is all
// body.
func splitFrontMatter(text string) (front, body string, err error) {
	text = strings.TrimPrefix(text, "\uFEFF")
	first, rest, _ := strings.Cut(text, "\n")
	if strings.TrimSpace(first) != "---" {
		return "", text, nil
	}
	for off := 0; ; {
		line, after, found := strings.Cut(rest[off:], "\n")
		if strings.TrimSpace(line) == "---" {
			return rest[:off], after, nil
		}
		if !found {
			return "", "", errors.New("the front matter opened by --- is never closed by a --- line")
		}
		off += len(line) + 1
	}
}

// claudeTools maps Claude Code's tool names to jean2's built-ins, so its agent files
// name the same powers here.
var claudeTools = map[string]string{
	"Read": "read-file", "Write": "write-file", "Edit": "edit", "MultiEdit": "multiedit",
	"Bash": "shell", "Grep": "grep", "Glob": "glob", "LS": "ls", "WebFetch": "webfetch",
	"TodoWrite": "todowrite", "TodoRead": "todoread", "AskUserQuestion": "question",
}

// toolList reads a tools field: a comma-separated string or a YAML list; nil when absent.
// An entry with a pattern (Claude Code's "Bash(git diff:*)") is left out with a warning:
// jean2 cannot narrow a tool to some of its arguments, and taking the whole tool would
// widen it.
func toolList(v any, field string, warnings *[]string) ([]string, error) {
	var raw []string
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		raw = strings.Split(x, ",")
	case []any:
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("%s: each entry must be a tool's name, not %v", field, e)
			}
			raw = append(raw, s)
		}
	default:
		return nil, fmt.Errorf("%s: give a comma-separated list of tool names", field)
	}
	out := []string{}
	for _, s := range raw {
		s = strings.TrimSpace(s)
		switch {
		case s == "":
		case strings.ContainsAny(s, "()*"):
			*warnings = append(*warnings, fmt.Sprintf("%s: %q left out: patterns of arguments are not supported", field, s))
		default:
			if m, ok := claudeTools[s]; ok {
				s = m
			}
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// Refuses says why the agent may not use a tool ("" when it may): plan mode takes only
// tools marked read-only; tools and disallowedTools narrow the rest. def is nil for a tool
// that is not installed.
func (ag Agent) Refuses(name string, def *tool.Definition) string {
	switch {
	case ag.ReadOnly && (def == nil || !def.ReadOnly()):
		return fmt.Sprintf("refused: this session runs the %q agent (plan mode), which may use only read-only tools, and %s can change things. "+
			"Do not retry: describe the change in your plan; the person switches to the build agent to make it.", ag.Name, name)
	case ag.Tools != nil && !slices.Contains(ag.Tools, name):
		return fmt.Sprintf("refused: the %q agent of this session may use only these tools: %s", ag.Name, strings.Join(ag.Tools, ", "))
	case slices.Contains(ag.DisallowedTools, name):
		return fmt.Sprintf("refused: the %q agent of this session may not use %s", ag.Name, name)
	}
	return ""
}

// Narrows says whether the agent takes any tool away (build takes none).
func (ag Agent) Narrows() bool {
	return ag.ReadOnly || ag.Tools != nil || len(ag.DisallowedTools) > 0
}

// prompt is the part of the system prompt the agent adds.
func (ag Agent) prompt() string {
	if strings.TrimSpace(ag.Instructions) == "" {
		return ""
	}
	return fmt.Sprintf("Instructions of the session's agent follow.\n<agent name=%q>\n%s\n</agent>", ag.Name, strings.TrimSpace(ag.Instructions))
}

// Agents returns the agents a session of the workspace folder may choose from, read now.
func (h *Harness) Agents(workspace string) Agents {
	return LoadAgents(h.opts.Home, workspace)
}

// sessionAgent is the agent a session runs with, read from the files now.
func (h *Harness) sessionAgent(sess store.Session, workspace string) (Agent, error) {
	all := h.Agents(workspace)
	ag, ok := all.Lookup(sess.Agent)
	if !ok {
		why := fmt.Sprintf("the agents defined are %s", strings.Join(all.Names(), ", "))
		for _, p := range all.Problems {
			why += fmt.Sprintf("; %s was not loaded: %s", p.Path, p.Error)
		}
		return Agent{}, fmt.Errorf("%w: %q (%s); fix its file or choose another agent", ErrNoAgent, sess.Agent, why)
	}
	return ag, nil
}

// refuses says why the turn's agent may not use the named tool ("" when it may). It is part
// of toolAllowed (subagents.go), the one gate of what the model is offered and of every call
// before the host runs it, whatever the model was offered; a subagent's tools are drawn from
// what it lets through.
func (t *turn) refuses(name string) string {
	if !t.preset.Narrows() {
		return ""
	}
	var def *tool.Definition
	if tl, ok := t.h.offered(t.session.WorkspaceID).Lookup(name); ok {
		d := tl.Definition()
		def = &d
	}
	return t.preset.Refuses(name, def)
}

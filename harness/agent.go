package harness

import (
	"strings"

	"github.com/jean2/jean2/memory"
	"github.com/jean2/jean2/skills"
	"github.com/jean2/jean2/tool"
)

// AgentTools are the tools of the agent's own powers, which need what only the server has
// (its home, its store): skill and skill_manage (package skills), memory (package memory)
// session_search and task (subagents). The server serves them as built-ins, beside package builtin's: they
// are listed, turned off and replaced like those. home is $JEAN2_HOME.
func AgentTools(home string, db SessionSearcher) []tool.Tool {
	return []tool.Tool{skills.Tool(home), skills.ManageTool(home), memory.Tool(home), SessionSearch(db), TaskTool()}
}

// Skills are the skills of a workspace folder as its sessions' next turn sees them: read
// again each time, so a skill saved now is there, and a broken one is listed with its
// error.
func (h *Harness) Skills(workspace string) skills.Set {
	return skills.Scan(h.opts.Home, workspace)
}

// agentPrompt is the part of a turn's system prompt the agent's own powers make: the
// skills' names and descriptions, then the memory files. Read once per turn, like the
// instruction files.
func agentPrompt(home, workspace string, seen func(string, skills.Set)) string {
	var parts []string
	set := skills.Scan(home, workspace)
	if seen != nil {
		seen(workspace, set)
	}
	if p := set.Prompt(); p != "" {
		parts = append(parts, p)
	}
	if p := memory.Prompt(home); p != "" {
		parts = append(parts, p)
	}
	return strings.Join(parts, "\n\n")
}

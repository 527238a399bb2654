package chat

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/internal/termtext"
)

// agentName is the session's agent as the header shows it.
func (u *chatUI) agentName() string { return agentOrDefault(u.ses.Agent) }

// agentOrDefault is the agent a session runs: the one it names, else the default.
func agentOrDefault(name string) string {
	if name == "" {
		return harness.DefaultAgent
	}
	return name
}

// tabLine reports whether a line is Tab then Enter on an otherwise empty line: the terminal
// reads whole lines, so the Tab that switches agents counts once Enter is pressed.
func tabLine(text string) bool {
	return strings.Contains(text, "\t") && strings.TrimSpace(text) == ""
}

// agentCommand runs /agent (list the workspace's agents), /agent NAME (switch to it) and
// Tab on an empty line (switch to the next agent, build → plan → the files' → build).
func (u *chatUI) agentCommand(ctx context.Context, arg string, next bool) {
	var all harness.Agents
	if err := u.api.Call(ctx, http.MethodGet, "/api/workspaces/"+url.PathEscape(u.ses.WorkspaceID)+"/agents", nil, &all); err != nil {
		u.println(u.st.red("Could not read the agents: " + err.Error()))
		return
	}
	name := strings.TrimSpace(arg)
	if next {
		names := all.Names()
		i := slices.Index(names, u.agentName())
		name = names[(i+1)%len(names)]
	}
	if name == "" {
		u.listAgents(all)
		return
	}
	var out session
	err := u.api.Call(ctx, http.MethodPatch, "/api/sessions/"+url.PathEscape(u.ses.ID), map[string]any{"agent": name}, &out)
	if err != nil {
		u.println(u.st.red("Could not switch the agent: " + err.Error()))
		return
	}
	u.ses.Agent = out.Agent
	ag, _ := all.Lookup(name)
	line := "Agent: " + u.st.bold(termtext.Line(u.agentName()))
	if ag.ReadOnly {
		line += u.st.yellow(" (plan mode: read-only; edits and commands are refused)")
	}
	u.println(line + u.st.dim(" — from the next message on. Tab then Enter switches again."))
}

// listAgents prints the agents, the session's marked, and the files that did not load.
func (u *chatUI) listAgents(all harness.Agents) {
	for _, ag := range all.Agents {
		mark := "  "
		if ag.Name == u.agentName() {
			mark = "▸ "
		}
		extra := ""
		if ag.ReadOnly {
			extra = " [read-only]"
		}
		if ag.Path != "" {
			extra += " " + ag.Path
		}
		u.println(mark + u.st.bold(termtext.Line(ag.Name)) + u.st.dim(extra) + "  " + termtext.Line(ag.Description))
		for _, w := range ag.Warnings {
			u.println(u.st.yellow("    warning: " + termtext.Line(w)))
		}
	}
	for _, p := range all.Problems {
		u.println(u.st.red(fmt.Sprintf("  not loaded: %s: %s", termtext.Line(p.Path), termtext.Line(p.Error))))
	}
	u.println(u.st.dim("(/agent NAME switches; Tab then Enter on an empty line switches to the next)"))
}

// setAgent switches the session to the named agent (the --agent flag of jean2 chat and
// jean2 run); the server refuses a name no agent of the workspace has, listing them.
func setAgent(ctx context.Context, api *Client, ses session, name string) (session, error) {
	var out session
	if err := api.Call(ctx, http.MethodPatch, "/api/sessions/"+url.PathEscape(ses.ID), map[string]any{"agent": name}, &out); err != nil {
		return ses, err
	}
	return out, nil
}

package ask

import (
	"slices"

	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/tool"
)

// A person who refuses a tool a sensitive file (ctx.fs asks before it reads `.env`) means
// the file, not the tool: the shell, whose commands read files without asking, hides the
// files refused in a session from them (its view covers each with an empty file), so one
// policy holds across tools and commands. A later grant of the file lifts the refusal; the
// session's end forgets it.

// Refuse remembers the sensitive files of a refused file permission ask, as their real
// paths, for the call's session. An ask that names no sensitive file, or a call without a
// session, leaves nothing.
func (g *Grants) Refuse(call Call, a tool.Ask) {
	if call.SessionID == "" || (a.Resource != "file" && a.Resource != "") {
		return
	}
	var paths []string
	for _, p := range resolvePaths(call, a.Paths) {
		if real := policy.Real(p); policy.IsSensitive(p) || policy.IsSensitive(real) {
			paths = append(paths, real)
		}
	}
	if len(paths) == 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.refused == nil {
		g.refused = map[string][]string{}
	}
	for _, p := range paths {
		if !slices.Contains(g.refused[call.SessionID], p) {
			g.refused[call.SessionID] = append(g.refused[call.SessionID], p)
		}
	}
}

// Refused returns the real paths of the sensitive files a person refused in session and
// granted since in none of its grants.
func (g *Grants) Refused(session string) []string {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return slices.Clone(g.refused[session])
}

// unrefuse drops from the session's refusals the paths a new grant covers; g.mu is held.
func (g *Grants) unrefuse(session string, e *entry) {
	if len(g.refused[session]) == 0 {
		return
	}
	kept := g.refused[session][:0]
	for _, p := range g.refused[session] {
		if !e.coversLiteral(p) && !e.coversReal(p) {
			kept = append(kept, p)
		}
	}
	g.refused[session] = kept
}

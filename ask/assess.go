package ask

import (
	"path/filepath"
	"strings"

	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/tool"
)

// Assessment is the host's judgement of a permission ask, made from what is asked and never
// lowered by the tool's own label: a tool that wants ~/.env cannot call it "low".
type Assessment struct {
	// Risk is the higher of what the ask touches and the tool's label: reading inside the
	// workspace is low, writing there or reading outside it medium, writing outside it high
	// (the risk the host gives its own addWorkspacePath ask); a sensitive or protected path,
	// or a file permission that names no path, is critical. An ask that is not about files keeps its label ("" ranks as critical).
	Risk string
	// PersonOnly is set when only a person may grant the ask: an MCP server's sampling
	// request (SamplingResource), or an ask that names a sensitive path
	// (policy.IsSensitive, or the "sensitive-file" marker), a protected one (Call.Protected:
	// jean2's home, credential folders), a blocked system path, or no path at all for a
	// file permission (whose grant would cover every file of the call). An unattended
	// policy denies it at every level.
	PersonOnly bool
	// Why says what made it person-only, for logs and messages; "" otherwise.
	Why string
}

// SamplingResource prefixes the resource of the ask an imported MCP server's sampling
// request makes ("mcp-sampling:NAME"): such an ask is only a person's to grant.
const SamplingResource = "mcp-sampling:"

// Assess judges a permission ask of call c. Paths are the ask's paths and its "file:"
// patterns that name an absolute or "~" path, resolved as grants resolve them; a path counts
// as inside the workspace only when its real location is (a link in the workspace that
// leads out is outside).
func Assess(c Call, a tool.Ask) Assessment {
	out := Assessment{Risk: a.Risk}
	if _, ok := riskRank[out.Risk]; !ok {
		out.Risk = "critical"
	}
	if a.Type != tool.AskPermission {
		return out
	}
	raise := func(r string) {
		if rank(r) > rank(out.Risk) {
			out.Risk = r
		}
	}
	personOnly := func(why string) {
		raise("critical")
		if !out.PersonOnly {
			out.PersonOnly, out.Why = true, why
		}
	}
	if strings.HasPrefix(a.Resource, SamplingResource) {
		// An MCP server's request for the model spends the person's provider on a prompt the
		// server wrote; MCP wants a person able to refuse every one.
		personOnly("an MCP server asks to use the model (sampling), which MCP leaves to a person")
	}
	paths := resolvePaths(c, a.Paths)
	for _, pat := range a.Patterns {
		fp, ok := strings.CutPrefix(pat, "file:")
		switch {
		case pat == "sensitive-file":
			personOnly("the tool marks the file sensitive")
		case !ok:
		case filepath.IsAbs(fp) || fp == "~" || strings.HasPrefix(fp, "~/"):
			paths = append(paths, policy.Resolve(fp, c.Workspace, c.Home))
		case policy.IsSensitive(fp):
			personOnly("it names a sensitive file " + fp)
		}
	}
	fileAsk := a.Resource == "file" || (a.Resource == "" && len(paths) > 0) || OpensReads(a)
	if !fileAsk {
		return out
	}
	if len(paths) == 0 {
		personOnly("a file permission that names no path would cover every file of the call")
		return out
	}
	write := accessOf(a) == AccessWrite
	ws := ""
	if c.Workspace != "" && filepath.IsAbs(c.Workspace) {
		ws = policy.Real(filepath.Clean(c.Workspace))
	}
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			// Not resolvable without a workspace: judged as outside it.
			p = string(filepath.Separator) + p
		}
		real := policy.Real(p)
		switch {
		case policy.IsSensitive(p) || policy.IsSensitive(real):
			personOnly("it names a sensitive path " + p)
		case protectedPath(c.Protected, p, real):
			personOnly("it names a protected path " + p)
		case policy.Scope{Workspace: c.Workspace, Home: c.Home}.Blocked(p):
			// (As toolfs judges it: a workspace below /root unblocks what lies inside it.)
			personOnly("it names a blocked system path " + p)
		}
		inside := ws != "" && policy.Within(real, ws)
		switch {
		case inside && !write:
			raise("low")
		case inside || !write:
			raise("medium")
		default:
			raise("high")
		}
	}
	return out
}

// protectedPath reports whether p (as written, or its real location) lies within one of
// the protected paths, or holds one (a grant of a folder covers what lies below it).
func protectedPath(protected []string, p, real string) bool {
	for _, x := range protected {
		if x == "" || !filepath.IsAbs(x) {
			continue
		}
		x = filepath.Clean(x)
		rx := policy.Real(x)
		for _, cand := range []string{p, real} {
			if policy.Within(cand, x) || policy.Within(cand, rx) || policy.Within(x, cand) || policy.Within(rx, cand) {
				return true
			}
		}
	}
	return false
}

package sandbox

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/jean2/jean2/tool"
)

// ParseGrant adds to p the power spec names, in the words a person grants with (`jean2
// tools approve NAME --grant SPEC`, the API's grants, a refusal's hint): childProcess,
// network=HOST, read=PATH, write=PATH or data=TOOL.
func ParseGrant(spec string, p *tool.Permissions) error {
	if i := strings.IndexFunc(spec, hiddenRune); i >= 0 {
		return fmt.Errorf("grant %q: it holds %U, a control or text-direction character that would not show as written", spec, []rune(spec[i:])[0])
	}
	kind, value, hasValue := strings.Cut(spec, "=")
	switch {
	case kind == "childProcess" && !hasValue:
		p.ChildProcess = true
	case kind == "network" && value != "":
		p.Network = append(p.Network, value)
	case kind == "read" && value != "":
		p.Read = append(p.Read, value)
	case kind == "write" && value != "":
		p.Write = append(p.Write, value)
	case kind == "data" && value != "":
		p.Data = value
	default:
		return fmt.Errorf("grant %q: give childProcess, network=HOST, read=PATH, write=PATH or data=TOOL", spec)
	}
	return nil
}

// hiddenRune reports the characters a grant may not hold: controls (a newline among them),
// and the text-direction marks and separators that make what a person reads differ from
// what is granted (U+202E shows "/srv/\u202etxt.ssh" reversed).
func hiddenRune(r rune) bool {
	return unicode.IsControl(r) || r == utf8.RuneError || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029'
}

// grantHint finds the grant a refusal's message names: a worker's hint quotes the command
// (`jean2 tools approve NAME --grant SPEC`, on one line), the egress proxy's names a host
// (… --grant network=HOST, or …).
var grantHint = regexp.MustCompile("`jean2 tools approve ([^\\s`]+) --grant ([^`\\n]+)`|jean2 tools approve ([^\\s`]+) --grant (network=[^\\s,;`)]+)")

// GrantHints returns the grants a failed call's message names for the tool name, in order
// and once each: what a person may grant from the refusal itself (the web client's button,
// the chat's /grant). The message is the tool's output, which the tool could have written
// itself: only grants to that very tool are taken, so that a hostile tool's text cannot
// offer another tool's powers, and the person still confirms what is granted.
func GrantHints(message, name string) []string {
	var out []string
	for _, at := range grantHint.FindAllStringSubmatchIndex(message, -1) {
		m := make([]string, 5)
		for i := range m {
			if at[2*i] >= 0 {
				m[i] = message[at[2*i]:at[2*i+1]]
			}
		}
		who, spec := m[1], m[2]
		if who == "" {
			who, spec = m[3], m[4]
		} else if rest := message[at[1]:]; rest != "" && !strings.ContainsAny(rest[:1], " \t\r\n,;.)") {
			// The quote ended inside the spec (a path holding a backtick): what
			// it holds is not what was refused.
			continue
		}
		if who == name && ParseGrant(spec, &tool.Permissions{}) == nil && !slices.Contains(out, spec) {
			out = append(out, spec)
		}
	}
	return out
}

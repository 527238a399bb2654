package ask

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/jean2/jean2/tool"
)

// Rule is one allow or deny rule of a RulePolicy: a tool name and, optionally, the ask's
// resource ("file", "shell", "network", …), each a path.Match glob. Text is the rule as
// written.
type Rule struct {
	Text, Tool, Resource string
}

// ParseRule reads TOOL or TOOL:RESOURCE.
func ParseRule(v string) (Rule, error) {
	name, res, _ := strings.Cut(strings.TrimSpace(v), ":")
	if name == "" {
		return Rule{}, fmt.Errorf("rule %q names no tool: use TOOL or TOOL:RESOURCE ('*' for any)", v)
	}
	for _, g := range []string{name, res} {
		if _, err := path.Match(g, ""); err != nil {
			return Rule{}, fmt.Errorf("rule %q: %v", v, err)
		}
	}
	return Rule{Text: v, Tool: name, Resource: res}, nil
}

// Matches reports whether the rule covers the ask q of the tool named toolName.
func (r Rule) Matches(toolName string, q tool.Ask) bool {
	if ok, _ := path.Match(r.Tool, toolName); !ok {
		return false
	}
	if r.Resource == "" {
		return true
	}
	ok, _ := path.Match(r.Resource, q.Resource)
	return ok
}

// RulePolicy answers the asks of a run no person watches (jean2 run, a scheduled session):
// a Deny rule refuses; then the Answers (prepared answers) answer; then an Allow rule
// grants a permission for the one call; anything else is refused. It never waits.
type RulePolicy struct {
	Allow, Deny []Rule
	Answers     *Answers // nil: none
	// Names are the words refusals use for the rules and the answers ("--allow",
	// "--deny", "--answers"); empty ones read "allow", "deny", "answers".
	AllowName, DenyName, AnswersName string
}

// Decide returns the answer to q (JSON of its type; for a permission
// {"granted":…,"duration":…}), or, when answer is nil, why it is refused.
func (p RulePolicy) Decide(ctx context.Context, toolName string, q tool.Ask) (answer json.RawMessage, refusal string) {
	allowN, denyN, answersN := or(p.AllowName, "allow"), or(p.DenyName, "deny"), or(p.AnswersName, "answers")
	for _, r := range p.Deny {
		if r.Matches(toolName, q) {
			return nil, "denied by " + denyN + " " + r.Text
		}
	}
	uncovered := fmt.Sprintf("no %s rule or %s entry covers it", allowN, answersN)
	if p.Answers != nil {
		a, err := p.fromAnswers(ctx, q)
		if err == nil {
			return a, ""
		}
		uncovered = fmt.Sprintf("no %s rule covers it, and %v", allowN, err)
	}
	if q.Type == tool.AskPermission {
		for _, r := range p.Allow {
			if !r.Matches(toolName, q) {
				continue
			}
			// What only a person may grant is not granted by a pattern (the server judges it
			// again with the call's facts; this catches what the ask alone shows).
			if as := Assess(Call{}, q); as.PersonOnly {
				return nil, fmt.Sprintf("%s %s matches, but only a person may grant this: %s", allowN, r.Text, as.Why)
			}
			return json.RawMessage(`{"granted":true,"duration":"once"}`), ""
		}
	}
	return nil, uncovered
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// fromAnswers is the prepared answer to q, or why there is none.
func (p RulePolicy) fromAnswers(ctx context.Context, q tool.Ask) (json.RawMessage, error) {
	if q.Type == tool.AskPermission {
		d, err := p.Answers.AskPermission(ctx, q)
		if err != nil {
			return nil, err
		}
		return json.Marshal(d)
	}
	return p.Answers.Ask(ctx, q)
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/jean2/jean2/ask"
	"github.com/jean2/jean2/chat"
	"github.com/jean2/jean2/hub"
	"github.com/jean2/jean2/tool"
)

// askRule is one --allow or --deny: a tool name and, optionally, the ask's resource
// ("file", "shell", "network", …), each a path.Match glob.
type askRule struct {
	text, tool, resource string
}

func (r askRule) matches(p hub.PendingAsk) bool {
	if ok, _ := path.Match(r.tool, p.Tool); !ok {
		return false
	}
	if r.resource == "" {
		return true
	}
	ok, _ := path.Match(r.resource, p.Ask.Resource)
	return ok
}

// ruleList is a repeatable flag of rules.
type ruleList []askRule

func (l *ruleList) String() string {
	s := make([]string, len(*l))
	for i, r := range *l {
		s[i] = r.text
	}
	return strings.Join(s, ",")
}

func (l *ruleList) Set(v string) error {
	name, res, _ := strings.Cut(strings.TrimSpace(v), ":")
	if name == "" {
		return fmt.Errorf("rule %q names no tool: use TOOL or TOOL:RESOURCE ('*' for any)", v)
	}
	for _, g := range []string{name, res} {
		if _, err := path.Match(g, ""); err != nil {
			return fmt.Errorf("rule %q: %v", v, err)
		}
	}
	*l = append(*l, askRule{text: v, tool: name, resource: res})
	return nil
}

// runPolicy answers a headless run's asks: --deny first, then --allow for permissions,
// then the answers file; anything else is refused. It never waits for anyone.
type runPolicy struct {
	allow, deny ruleList
	answers     *ask.Answers
}

func newRunPolicy(allow, deny ruleList, answersFile string) (runPolicy, error) {
	p := runPolicy{allow: allow, deny: deny}
	if answersFile != "" {
		a, err := ask.LoadAnswers(answersFile)
		if err != nil {
			return p, usagef("--answers: %v", err)
		}
		p.answers = a
	}
	return p, nil
}

func (p runPolicy) decide(ctx context.Context, pa hub.PendingAsk) chat.AskDecision {
	for _, r := range p.deny {
		if r.matches(pa) {
			return chat.AskDecision{Refuse: "denied by --deny " + r.text}
		}
	}
	uncovered := "no --allow rule or --answers entry covers it"
	if p.answers != nil {
		d, err := p.fromFile(ctx, pa.Ask)
		if err == nil {
			return d
		}
		uncovered = "no --allow rule covers it, and " + err.Error()
	}
	if pa.Ask.Type == tool.AskPermission {
		for _, r := range p.allow {
			if !r.matches(pa) {
				continue
			}
			// What only a person may grant is not granted by a pattern (the server judges it
			// again with the call's facts; this catches what the ask alone shows).
			if as := ask.Assess(ask.Call{}, pa.Ask); as.PersonOnly {
				return chat.AskDecision{Refuse: fmt.Sprintf("--allow %s matches, but only a person may grant this: %s", r.text, as.Why)}
			}
			return chat.AskDecision{Answer: json.RawMessage(`{"granted":true,"duration":"once"}`)}
		}
	}
	return chat.AskDecision{Refuse: uncovered}
}

// fromFile is the answers file's answer to a, or why it has none.
func (p runPolicy) fromFile(ctx context.Context, a tool.Ask) (chat.AskDecision, error) {
	if a.Type == tool.AskPermission {
		d, err := p.answers.AskPermission(ctx, a)
		if err != nil {
			return chat.AskDecision{}, err
		}
		data, err := json.Marshal(d)
		return chat.AskDecision{Answer: data}, err
	}
	v, err := p.answers.Ask(ctx, a)
	if err != nil {
		return chat.AskDecision{}, err
	}
	return chat.AskDecision{Answer: v}, nil
}

package main

import (
	"context"
	"strings"

	"github.com/jean2/jean2/ask"
	"github.com/jean2/jean2/chat"
	"github.com/jean2/jean2/hub"
)

// ruleList is a repeatable flag of --allow or --deny rules (ask.ParseRule).
type ruleList []ask.Rule

func (l *ruleList) String() string {
	s := make([]string, len(*l))
	for i, r := range *l {
		s[i] = r.Text
	}
	return strings.Join(s, ",")
}

func (l *ruleList) Set(v string) error {
	r, err := ask.ParseRule(v)
	if err != nil {
		return err
	}
	*l = append(*l, r)
	return nil
}

// runPolicy answers a headless run's asks: --deny first, then the answers file, then
// --allow for permissions; anything else is refused. It never waits for anyone. The rules
// are ask.RulePolicy's, which scheduled sessions use as well.
type runPolicy struct {
	ask.RulePolicy
}

func newRunPolicy(allow, deny ruleList, answersFile string) (runPolicy, error) {
	p := runPolicy{ask.RulePolicy{Allow: allow, Deny: deny, AllowName: "--allow", DenyName: "--deny", AnswersName: "--answers"}}
	if answersFile != "" {
		a, err := ask.LoadAnswers(answersFile)
		if err != nil {
			return p, usagef("--answers: %v", err)
		}
		p.Answers = a
	}
	return p, nil
}

func (p runPolicy) decide(ctx context.Context, pa hub.PendingAsk) chat.AskDecision {
	answer, refusal := p.Decide(ctx, pa.Tool, pa.Ask)
	return chat.AskDecision{Answer: answer, Refuse: refusal}
}

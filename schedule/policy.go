package schedule

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/jean2/jean2/ask"
)

// Policy is how a schedule's runs answer the asks of their tools, as `jean2 run`'s flags
// do: Deny rules refuse, then the prepared Answers answer, then Allow rules grant a
// permission for the one call; anything else is refused at once and reported in the run.
type Policy struct {
	Allow []string `json:"allow"`
	Deny  []string `json:"deny"`
	// Answers are prepared answers in the format of jean2 run --answers: an object from
	// question to answer, or an array used in order (each run starts at its beginning).
	Answers json.RawMessage `json:"answers,omitempty"`
}

// ParsePolicy reads and checks a schedule's policy; empty means no rules (every ask is
// refused). The result is the policy as stored, normalized.
func ParsePolicy(raw json.RawMessage) (Policy, error) {
	var p Policy
	if len(bytes.TrimSpace(raw)) > 0 && string(bytes.TrimSpace(raw)) != "null" {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return Policy{}, fmt.Errorf("policy: %v (it is {\"allow\": [RULE…], \"deny\": [RULE…], \"answers\": {…}})", err)
		}
	}
	if p.Allow == nil {
		p.Allow = []string{}
	}
	if p.Deny == nil {
		p.Deny = []string{}
	}
	if _, err := p.Rules(); err != nil {
		return Policy{}, err
	}
	return p, nil
}

// JSON is the policy as stored.
func (p Policy) JSON() json.RawMessage {
	data, _ := json.Marshal(p) // strings and valid JSON only
	return data
}

// Rules builds the policy one run uses: its prepared answers start afresh.
func (p Policy) Rules() (ask.RulePolicy, error) {
	rp := ask.RulePolicy{AllowName: "allow", DenyName: "deny", AnswersName: "policy.answers"}
	for _, group := range []struct {
		name string
		in   []string
		out  *[]ask.Rule
	}{{"allow", p.Allow, &rp.Allow}, {"deny", p.Deny, &rp.Deny}} {
		for i, text := range group.in {
			r, err := ask.ParseRule(text)
			if err != nil {
				return rp, fmt.Errorf("policy.%s[%d]: %v", group.name, i, err)
			}
			*group.out = append(*group.out, r)
		}
	}
	if len(bytes.TrimSpace(p.Answers)) > 0 && string(bytes.TrimSpace(p.Answers)) != "null" {
		a, err := ask.ParseAnswers("policy.answers", p.Answers)
		if err != nil {
			return rp, fmt.Errorf("policy.answers: %v", err)
		}
		rp.Answers = a
	}
	return rp, nil
}

package ask

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jean2/jean2/tool"
)

// RefusedError is the answer of an asker that has no one to ask. It unwraps to
// tool.ErrNoOneToAsk.
type RefusedError struct {
	Type     string // the ask's type
	Question string // its question (the capability, for client_capability)
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("cannot answer %s ask %q: no person or client is attached to this run; run jean2 on a terminal to answer it, or pass --answers FILE with prepared answers", e.Type, e.Question)
}

// Unwrap lets callers test errors.Is(err, tool.ErrNoOneToAsk).
func (e *RefusedError) Unwrap() error { return tool.ErrNoOneToAsk }

func refusal(a tool.Ask) error {
	q := a.Question
	if a.Type == tool.AskClientCapability && q == "" {
		q = a.Capability
	}
	return &RefusedError{Type: a.Type, Question: q}
}

// Refuse answers no ask: each fails with a RefusedError that says how to answer it.
type Refuse struct{}

var _ tool.Asker = Refuse{}

// Ask fails with a RefusedError.
func (Refuse) Ask(_ context.Context, a tool.Ask) (json.RawMessage, error) {
	return nil, refusal(a)
}

var riskRank = map[string]int{"low": 1, "medium": 2, "high": 3, "critical": 4}

// rank orders risks; an ask that states no risk cannot be judged and ranks as critical.
func rank(risk string) int {
	if r, ok := riskRank[risk]; ok {
		return r
	}
	return riskRank["critical"]
}

// Policy decides permission asks for unattended runs: it grants, for the one call, every
// permission whose risk is at most its level and denies the rest (a denial is an answer,
// false, not an error). The risk is the host's (Assess, with the call facts of the
// context), never lower than what the ask touches whatever the tool labels it, and an ask
// only a person may grant (a sensitive or protected path, a file permission without a path)
// is denied at every level. Every other ask fails as with Refuse. The zero Policy denies
// every permission. This is the one place unattended permissions are decided: the hub's
// sessions without a client and MCP clients without elicitation both come here.
type Policy struct {
	autoApprove string
}

var (
	_ tool.Asker      = Policy{}
	_ PermissionAsker = Policy{}
)

// NewPolicy returns a policy that grants permissions up to maxRisk ("low", "medium", "high"
// or "critical"); "" or "none" grants nothing.
func NewPolicy(maxRisk string) (Policy, error) {
	switch maxRisk {
	case "", "none":
		return Policy{}, nil
	case "low", "medium", "high", "critical":
		return Policy{autoApprove: maxRisk}, nil
	}
	return Policy{}, fmt.Errorf("auto-approve risk %q is not one of none, low, medium, high, critical", maxRisk)
}

// Ask decides a permission ask; any other ask fails with a RefusedError.
func (p Policy) Ask(ctx context.Context, a tool.Ask) (json.RawMessage, error) {
	if a.Type != tool.AskPermission {
		return nil, refusal(a)
	}
	d, err := p.AskPermission(ctx, a)
	if err != nil {
		return nil, err
	}
	return json.Marshal(d.Granted)
}

// AskPermission grants for this call only when the ask's risk, as Assess judges it with the
// call facts ctx carries (ContextWithCall), is within the policy's level and the ask is not
// one only a person may grant. Nothing longer is granted: the policy is cheap to ask again,
// and a grant it made must not outlive a change of policy.
func (p Policy) AskPermission(ctx context.Context, a tool.Ask) (Decision, error) {
	if a.Type != tool.AskPermission {
		return Decision{}, fmt.Errorf("AskPermission needs a permission ask, not %q", a.Type)
	}
	c, _ := CallFrom(ctx)
	as := Assess(c, a)
	if p.autoApprove != "" && !as.PersonOnly && rank(as.Risk) <= rank(p.autoApprove) {
		return Decision{Granted: true, Duration: tool.DurationOnce}, nil
	}
	return Decision{}, nil
}

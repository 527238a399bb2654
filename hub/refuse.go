package hub

import (
	"context"
	"fmt"

	"github.com/jean2/jean2/tool"
)

// OutcomeRefused is the outcome of an ask a client refused to answer (Refuse): a headless
// run whose policy does not cover it, for one.
const OutcomeRefused = "refused"

// RefusedByClientError is the waiting tool's error when a client refused its ask. It
// unwraps to tool.ErrNoOneToAsk: to the tool, a refusal is the same as nobody being there.
type RefusedByClientError struct {
	Type, Question, Tool, Reason string
}

func (e *RefusedByClientError) Error() string {
	return fmt.Sprintf("%s ask %q of tool %s: refused by the client: %s", e.Type, e.Question, e.Tool, e.Reason)
}

func (e *RefusedByClientError) Unwrap() error { return tool.ErrNoOneToAsk }

// Refuse ends a pending ask of the session without an answer: the tool gets a
// *RefusedByClientError at once, and ask.resolved says "refused" with the reason. A client
// with no one to ask (a script, CI) uses it instead of letting the ask wait for its
// timeout. ErrNoSuchAsk as for Answer.
func (h *Hub) Refuse(ctx context.Context, sessionID, askID, reason string) error {
	p, err := h.pendingAsk("refuse", sessionID, askID)
	if err != nil {
		return err
	}
	if reason == "" {
		reason = "no reason given"
	}
	q := p.Ask.Question
	if q == "" {
		q = p.Ask.Capability
	}
	refusal := &RefusedByClientError{Type: p.Ask.Type, Question: q, Tool: p.Tool, Reason: reason}
	if !h.resolve(ctx, p, OutcomeRefused, nil, refusal) {
		return fmt.Errorf("refuse ask %q of session %q: %w (another answer came first, or it timed out or was cancelled)", askID, sessionID, ErrNoSuchAsk)
	}
	return nil
}

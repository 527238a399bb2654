package hub

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/jean2/jean2/ask"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/tool"
)

// Event types the hub publishes for asks.
const (
	EventAskPending  = "ask.pending"
	EventAskResolved = "ask.resolved"
)

// Outcomes of an ask, in ask.resolved.
const (
	OutcomeAnswered  = "answered"
	OutcomeTimeout   = "timeout"
	OutcomeCancelled = "cancelled"
	OutcomePolicy    = "policy"
)

// MaxAnswerBytes caps an answer's size; a bigger one is refused and the ask stays pending.
const MaxAnswerBytes = 1 << 20

// PendingAsk is an ask waiting for a person, as clients see it.
type PendingAsk struct {
	ID        string `json:"id"`
	SessionID string `json:"sessionId"`
	// FromSessionID names the session whose call asks when it is not SessionID: a subagent's
	// asks wait in its root session, where the person is, and name the child here.
	FromSessionID string    `json:"fromSessionId,omitempty"`
	CallID        string    `json:"callId"`
	Tool          string    `json:"tool"`
	Ask           tool.Ask  `json:"ask"`
	CreatedAt     time.Time `json:"createdAt"`
	ExpiresAt     time.Time `json:"expiresAt"`
}

// AskPendingPayload is the payload of ask.pending.
type AskPendingPayload struct {
	Ask PendingAsk `json:"ask"`
}

// AskResolvedPayload is the payload of ask.resolved. Answer is the answer the tool got
// (for a permission, {"granted","duration"}); Error says why it got none. A policy decision
// has no ask.pending before it, so it carries the tool and the ask as well.
type AskResolvedPayload struct {
	AskID   string          `json:"askId"`
	CallID  string          `json:"callId"`
	Outcome string          `json:"outcome"`
	Answer  json.RawMessage `json:"answer,omitempty"`
	Error   string          `json:"error,omitempty"`
	Tool    string          `json:"tool,omitempty"`
	Ask     *tool.Ask       `json:"ask,omitempty"`
}

// pendingAsk is a PendingAsk and the waiting tool's mailbox. Exactly one resolver (Answer,
// the timeout, the tool's cancellation or Hub.Close) claims it, by removing it from its
// session's asks, and then sends one result.
type pendingAsk struct {
	PendingAsk
	session *session
	result  chan askResult // capacity 1
	// announced is set once ask.pending is in the log (guarded by session.mu): only then do
	// Pending and Answer see the ask, so no client can answer it before it is announced and
	// ask.resolved never precedes ask.pending.
	announced bool
}

type askResult struct {
	answer json.RawMessage // checked by ask.CheckAnswer
	err    error
}

// Asker returns the asker of the session's tool calls. It implements tool.Asker and
// ask.PermissionAsker: an ask goes to the clients attached to the session (ask.pending,
// answered through Answer), or to Options.Unattended when none is attached.
func (h *Hub) Asker(sessionID string) tool.Asker {
	return &sessionAsker{hub: h, sessionID: sessionID}
}

type sessionAsker struct {
	hub       *Hub
	sessionID string
}

var (
	_ tool.Asker          = (*sessionAsker)(nil)
	_ ask.PermissionAsker = (*sessionAsker)(nil)
)

// Ask answers with the JSON the ask type promises the tool (a boolean for a permission).
func (a *sessionAsker) Ask(ctx context.Context, q tool.Ask) (json.RawMessage, error) {
	if q.Type == tool.AskPermission {
		d, err := a.AskPermission(ctx, q)
		if err != nil {
			return nil, err
		}
		return json.Marshal(d.Granted)
	}
	return a.hub.ask(ctx, a.sessionID, q)
}

// AskPermission returns whether the permission was granted and for how long.
func (a *sessionAsker) AskPermission(ctx context.Context, q tool.Ask) (ask.Decision, error) {
	if q.Type != tool.AskPermission {
		return ask.Decision{}, fmt.Errorf("AskPermission needs a permission ask, not %q", q.Type)
	}
	answer, err := a.hub.ask(ctx, a.sessionID, q)
	if err != nil {
		return ask.Decision{}, err
	}
	var d ask.Decision
	if err := json.Unmarshal(answer, &d); err != nil {
		return ask.Decision{}, fmt.Errorf("permission ask %q: decision %s: %w", q.Question, answer, err)
	}
	if !d.Granted {
		d.Duration = ""
	}
	return d, nil
}

// ask puts q to the session's clients, or its policy when none is attached, and returns
// the checked answer (for a permission, a marshalled ask.Decision).
func (h *Hub) ask(ctx context.Context, sessionID string, q tool.Ask) (json.RawMessage, error) {
	call, _ := ask.CallFrom(ctx)
	if err := ask.CheckAsk(q); err != nil {
		return nil, fmt.Errorf("tool %s: %w", call.Tool, err)
	}
	if h.store == nil {
		return nil, errNoStore
	}
	h.mu.Lock()
	closing := h.closing
	h.mu.Unlock()
	if closing {
		return nil, fmt.Errorf("%s ask %q of tool %s: %w", q.Type, q.Question, call.Tool, ErrClosed)
	}
	if sessionID == "" {
		return nil, fmt.Errorf("%s ask %q of tool %s: the call belongs to no session, so no one can answer it", q.Type, q.Question, call.Tool)
	}
	if _, err := h.store.Session(ctx, sessionID); err != nil {
		return nil, fmt.Errorf("%s ask %q of tool %s: %w", q.Type, q.Question, call.Tool, err)
	}
	if h.Attached(sessionID) == 0 && (h.elsewhere == nil || !h.elsewhere(sessionID)) {
		return h.askPolicy(ctx, sessionID, call, q)
	}
	p, err := h.addAsk(sessionID, call, q)
	if err != nil {
		return nil, err
	}
	payload, err := json.Marshal(AskPendingPayload{Ask: p.PendingAsk})
	if err == nil {
		announce := func(v bool) {
			p.session.mu.Lock()
			p.announced = v
			p.session.mu.Unlock()
		}
		_, err = h.publish(ctx, sessionID, func() ([]store.Event, error) {
			// Listed and answerable from before the commit: a client that subscribed a moment
			// ago may read ask.pending from the store (its replay) as soon as it is committed,
			// and must find the ask. ask.resolved still follows ask.pending in the log, since
			// it is published under the session's publish lock, which this append holds.
			announce(true)
			out, err := h.store.AppendEvents(ctx, sessionID, store.NewEvent{Type: EventAskPending, Payload: payload})
			if err != nil {
				announce(false)
			}
			return out, err
		})
	}
	if err != nil {
		if h.claim(p) {
			h.release(p.session)
		}
		return nil, fmt.Errorf("%s ask %q of tool %s: announce it to the session's clients: %w", q.Type, q.Question, call.Tool, err)
	}

	timer := time.NewTimer(time.Until(p.ExpiresAt))
	defer timer.Stop()
	select {
	case r := <-p.result:
		return r.answer, r.err
	case <-timer.C:
		h.resolve(ctx, p, OutcomeTimeout, nil, fmt.Errorf("%s ask %q of tool %s: %w (%s)", q.Type, q.Question, call.Tool, ErrAskTimeout, p.ExpiresAt.Sub(p.CreatedAt)))
	case <-ctx.Done():
		h.resolve(ctx, p, OutcomeCancelled, nil, fmt.Errorf("%s ask %q of tool %s: cancelled while waiting for an answer: %w", q.Type, q.Question, call.Tool, context.Cause(ctx)))
	}
	// Whoever claimed the ask first (maybe an answer that raced the timer) sent the result.
	r := <-p.result
	return r.answer, r.err
}

// addAsk registers a pending ask, refusing it when the hub is closing or the session has
// too many waiting.
func (h *Hub) addAsk(sessionID string, call ask.Call, q tool.Ask) (*pendingAsk, error) {
	id, err := newAskID()
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	p := &pendingAsk{
		PendingAsk: PendingAsk{
			ID: id, SessionID: sessionID, CallID: call.CallID, Tool: call.Tool, Ask: q,
			FromSessionID: fromSession(sessionID, call),
			CreatedAt:     now, ExpiresAt: now.Add(time.Duration(h.askTimeout.Load())),
		},
		result: make(chan askResult, 1),
	}
	// Under h.mu, so that Close, which collects the asks to cancel under it too, cannot miss
	// this one.
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closing {
		return nil, fmt.Errorf("%s ask %q of tool %s: %w", q.Type, q.Question, call.Tool, ErrClosed)
	}
	s := h.sessions[sessionID]
	if s == nil {
		s = newSession(sessionID)
		h.sessions[sessionID] = s
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.asks) >= h.maxAsks {
		return nil, fmt.Errorf("%s ask %q of tool %s: %w: session %s already has %d asks waiting for an answer; answer some first",
			q.Type, q.Question, call.Tool, ErrTooManyAsks, sessionID, h.maxAsks)
	}
	s.users++ // released by whoever resolves the ask
	p.session = s
	s.asks[id] = p
	return p, nil
}

// fromSession is the session whose call asks, when not the one the ask waits in.
func fromSession(sessionID string, call ask.Call) string {
	if call.SessionID == sessionID {
		return ""
	}
	return call.SessionID
}

// claim removes p from its session's pending asks; only the first caller gets true.
func (h *Hub) claim(p *pendingAsk) bool {
	s := p.session
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.asks[p.ID] != p {
		return false
	}
	delete(s.asks, p.ID)
	return true
}

// resolve ends p with outcome when nothing ended it first: it publishes ask.resolved, then
// hands the waiting tool its answer or error.
func (h *Hub) resolve(ctx context.Context, p *pendingAsk, outcome string, answer json.RawMessage, err error) bool {
	if !h.claim(p) {
		return false
	}
	defer h.release(p.session)
	ev := AskResolvedPayload{AskID: p.ID, CallID: p.CallID, Outcome: outcome, Answer: answer}
	if err != nil {
		ev.Error = err.Error()
	}
	h.publishResolved(ctx, p.SessionID, ev)
	p.result <- askResult{answer: answer, err: err}
	return true
}

// publishResolved records how an ask ended. The answer still reaches the tool when this
// fails: a person's answer is not lost to a store hiccup, and the failure is logged.
func (h *Hub) publishResolved(ctx context.Context, sessionID string, ev AskResolvedPayload) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	payload, err := json.Marshal(ev)
	if err == nil {
		// Close cancels the pending asks before it refuses publishing, so this lands.
		_, err = h.Publish(ctx, sessionID, store.NewEvent{Type: EventAskResolved, Payload: payload})
	}
	if err != nil {
		h.log.Warn("ask resolution not recorded", "session", sessionID, "ask", ev.AskID, "outcome", ev.Outcome, "err", err)
	}
}

// askPolicy lets the session's unattended asker decide, and records its decision.
func (h *Hub) askPolicy(ctx context.Context, sessionID string, call ask.Call, q tool.Ask) (json.RawMessage, error) {
	var decider tool.Asker
	if h.unattended != nil {
		decider = h.unattended(sessionID)
	}
	if decider == nil {
		decider = ask.Policy{}
	}
	var answer json.RawMessage
	var err error
	if q.Type == tool.AskPermission {
		answer, err = policyPermission(ctx, decider, q)
	} else {
		answer, err = decider.Ask(ctx, q)
		if err == nil {
			answer, err = ask.CheckAnswer(q, answer)
		}
	}
	id, idErr := newAskID()
	if idErr != nil {
		id = "ask_unknown"
	}
	ev := AskResolvedPayload{AskID: id, CallID: call.CallID, Outcome: OutcomePolicy, Tool: call.Tool, Ask: &q}
	if err != nil {
		ev.Error = err.Error()
	} else {
		ev.Answer = answer
	}
	h.publishResolved(ctx, sessionID, ev)
	if err != nil {
		return nil, err
	}
	return answer, nil
}

// policyPermission asks decider for a permission and returns a marshalled ask.Decision.
func policyPermission(ctx context.Context, decider tool.Asker, q tool.Ask) (json.RawMessage, error) {
	if pa, ok := decider.(ask.PermissionAsker); ok {
		d, err := pa.AskPermission(ctx, q)
		if err != nil {
			return nil, err
		}
		if d.Granted && d.Duration == "" {
			d.Duration = tool.DurationOnce
		}
		if !d.Granted {
			d.Duration = ""
		}
		return json.Marshal(d)
	}
	answer, err := decider.Ask(ctx, q)
	if err != nil {
		return nil, err
	}
	return ask.CheckAnswer(q, answer)
}

// Pending lists the session's asks waiting for an answer, oldest first: what a client that
// (re)attaches shows.
func (h *Hub) Pending(sessionID string) []PendingAsk {
	out := []PendingAsk{}
	s := h.lookup(sessionID)
	if s == nil {
		return out
	}
	s.mu.Lock()
	for _, p := range s.asks {
		if p.announced {
			out = append(out, p.PendingAsk)
		}
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// pendingAsk finds an announced ask of the session that is still waiting; ErrNoSuchAsk,
// worded for the action, when there is none.
func (h *Hub) pendingAsk(action, sessionID, askID string) (*pendingAsk, error) {
	if s := h.lookup(sessionID); s != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		if q := s.asks[askID]; q != nil && q.announced {
			return q, nil
		}
	}
	return nil, fmt.Errorf("%s ask %q of session %q: %w (already answered, timed out or cancelled, or never asked)", action, askID, sessionID, ErrNoSuchAsk)
}

// Answer answers a pending ask of the session. The first answer of the right shape wins: a
// later one gets ErrNoSuchAsk. An answer of the wrong shape (errors.Is(err,
// ask.ErrInvalidAnswer)) is refused and the ask stays pending. A permission is answered
// with true, false or {"granted":true,"duration":"once|session|workspace"}.
func (h *Hub) Answer(ctx context.Context, sessionID, askID string, answer json.RawMessage) error {
	p, err := h.pendingAsk("answer", sessionID, askID)
	if err != nil {
		return err
	}
	if len(answer) > MaxAnswerBytes {
		return fmt.Errorf("answer ask %q of session %q: %w: the answer is %d bytes, more than the %d allowed", askID, sessionID, ask.ErrInvalidAnswer, len(answer), MaxAnswerBytes)
	}
	if len(bytes.TrimSpace(answer)) == 0 {
		return fmt.Errorf("answer ask %q of session %q: %w: the answer is empty; send JSON of the ask's type", askID, sessionID, ask.ErrInvalidAnswer)
	}
	checked, err := ask.CheckAnswer(p.Ask, answer)
	if err != nil {
		return fmt.Errorf("answer ask %q of session %q: %w", askID, sessionID, err)
	}
	if !h.resolve(ctx, p, OutcomeAnswered, checked, nil) {
		return fmt.Errorf("answer ask %q of session %q: %w (another answer came first, or it timed out or was cancelled)", askID, sessionID, ErrNoSuchAsk)
	}
	return nil
}

func newAskID() (string, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("make an ask id: %w", err)
	}
	return "ask_" + hex.EncodeToString(b[:]), nil
}

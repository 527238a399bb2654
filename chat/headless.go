package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/hub"
	"github.com/jean2/jean2/internal/termtext"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/tool"
)

// How a headless run ended, from the best to the worst news (HeadlessResult.Status).
const (
	StatusDone    = "done"    // the turn finished, every ask answered
	StatusFailed  = "failed"  // the turn failed (the model, the harness) or was stopped
	StatusRefused = "refused" // the policy refused at least one ask
	StatusLimit   = "limit"   // MaxRounds, the deadline, or the server's round limits ended the turn
)

// Events a headless run adds to the session's own in its JSON output. They have the
// shape of the API's events without a seq (they are not in the session's log).
const (
	EventRunStarted  = "run.started"
	EventRunRefused  = "run.refused"
	EventRunFinished = "run.finished"
)

// HeadlessOptions say what a headless run (`jean2 run`) sends, where, and who answers the
// asks of its tools: a policy, never a person.
type HeadlessOptions struct {
	// Server, Token, Workspace, Session, Provider, Model, Agent and StartServer as in
	// Options.
	Server, Token      string
	Workspace, Session string
	Provider, Model    string
	Agent              string
	StartServer        func(ctx context.Context) (*LocalServer, error)

	// Prompt is the message of the turn.
	Prompt string
	// MaxRounds stops the turn when the model is called for round MaxRounds+1 (0: only
	// the server's own limits).
	MaxRounds int
	// JSON writes every event of the turn to Stdout, one JSON object a line; otherwise
	// Stdout gets only the final answer's text.
	JSON bool
	// Decide answers an ask; it must not wait for anyone. Nil refuses every ask.
	Decide func(ctx context.Context, p hub.PendingAsk) AskDecision

	Stdout, Stderr io.Writer
}

// AskDecision is the policy's answer to an ask: Answer (JSON of the ask's type; for a
// permission {"granted":…,"duration":…}), or, when Answer is nil, a refusal saying why.
// A refused permission is answered {"granted":false}; any other ask refused is ended
// without an answer (the tool gets an error).
type AskDecision struct {
	Answer json.RawMessage
	Refuse string
}

// Refusal is an ask the policy refused.
type Refusal struct {
	AskID  string   `json:"askId"`
	CallID string   `json:"callId"`
	Tool   string   `json:"tool"`
	Ask    tool.Ask `json:"ask"`
	Reason string   `json:"reason"`
}

// HeadlessResult is how a headless run ended; it is also the payload of run.finished.
type HeadlessResult struct {
	Status    string    `json:"status"`
	SessionID string    `json:"sessionId"`
	TurnID    string    `json:"turnId,omitempty"`
	Reason    string    `json:"reason,omitempty"` // turn.finished's reason
	Error     string    `json:"error,omitempty"`
	Rounds    int       `json:"rounds"`
	Refusals  []Refusal `json:"refusals"`
	Text      string    `json:"text"` // the final answer
}

// headlessStopWait bounds the wait for turn.finished once the run has stopped the turn.
const headlessStopWait = 15 * time.Second

// RunHeadless sends the prompt as one turn and follows it to its end with no person:
// asks go to o.Decide. It returns how the turn ended; an error means it could not be
// followed to its end (no server, no session, the stream lost).
func RunHeadless(ctx context.Context, o HeadlessOptions) (HeadlessResult, error) {
	switch {
	case o.Workspace == "" && o.Session == "":
		return HeadlessResult{}, errors.New("headless run: neither a workspace nor a session")
	case strings.TrimSpace(o.Prompt) == "":
		return HeadlessResult{}, usagef("the prompt is empty")
	case o.Stdout == nil || o.Stderr == nil:
		return HeadlessResult{}, errors.New("headless run: Stdout and Stderr are required")
	}
	api, local, err := connect(ctx, "jean2 run", o.Server, o.Token, o.StartServer, o.Stderr)
	if err != nil {
		return HeadlessResult{}, err
	}
	if local != nil {
		defer local.Close()
	}
	ses, _, err := sessionFor(ctx, api, o.Workspace, o.Session)
	if err != nil {
		return HeadlessResult{}, err
	}
	if o.Provider != "" || o.Model != "" {
		if ses, err = setChatModel(ctx, api, ses, o.Provider, o.Model); err != nil {
			return HeadlessResult{}, usagef("--provider %q --model %q: %v", o.Provider, o.Model, err)
		}
	}
	if o.Agent != "" {
		if ses, err = setAgent(ctx, api, ses, o.Agent); err != nil {
			return HeadlessResult{}, usagef("--agent %q: %v", o.Agent, err)
		}
	}
	r := &headlessRun{o: o, api: api, ses: ses, handled: map[string]bool{}}
	r.res.SessionID, r.res.Refusals = ses.ID, []Refusal{}
	return r.run(ctx)
}

// headlessRun is one turn followed by RunHeadless.
type headlessRun struct {
	o   HeadlessOptions
	api *Client
	ses session

	userMessageID string
	userSeq       int64
	handled       map[string]bool // asks decided already (a reconnect lists them again)
	limited       bool
	stopped       bool
	res           HeadlessResult

	outMu sync.Mutex
}

func (r *headlessRun) run(ctx context.Context) (HeadlessResult, error) {
	// The stream outlives ctx: once ctx ends the turn is stopped and its end still read.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	items := make(chan streamItem)
	go r.api.streamEvents(sctx, r.ses.ID, r.ses.LastSeq, items)
	// Attached before the turn starts, so that its asks come here and not to the server's
	// unattended policy.
	if err := r.awaitHello(ctx, items); err != nil {
		return r.res, err
	}
	if err := r.startTurn(ctx); err != nil {
		return r.res, err
	}
	if err := r.follow(ctx, items); err != nil {
		return r.res, err
	}
	r.res.Text = r.finalText(context.WithoutCancel(ctx))
	r.res.Status = r.status(ctx)
	r.emit(EventRunFinished, r.res)
	if !r.o.JSON && r.res.Text != "" {
		text := r.res.Text
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		fmt.Fprint(r.o.Stdout, text)
	}
	return r.res, nil
}

// awaitHello waits for the stream's first frame; a session whose turn runs already is
// not one this run can add a turn to.
func (r *headlessRun) awaitHello(ctx context.Context, items <-chan streamItem) error {
	for {
		select {
		case it, ok := <-items:
			switch {
			case !ok:
				return errors.New("the event stream ended before it started")
			case it.err != nil:
				return it.err
			case it.hello != nil:
				if it.hello.Running {
					return fmt.Errorf("session %s is running a turn already: wait for it to end, or stop it", r.ses.ID)
				}
				return nil
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (r *headlessRun) startTurn(ctx context.Context) error {
	var out struct {
		Turn struct {
			ID            string `json:"id"`
			UserMessageID string `json:"userMessageId"`
		} `json:"turn"`
	}
	err := r.api.Call(ctx, http.MethodPost, r.sessionPath("/turns"), map[string]any{"text": r.o.Prompt}, &out)
	if err != nil {
		return fmt.Errorf("start the turn in session %s: %w", r.ses.ID, err)
	}
	r.res.TurnID, r.userMessageID = out.Turn.ID, out.Turn.UserMessageID
	r.emit(EventRunStarted, map[string]any{
		"sessionId": r.ses.ID, "workspaceId": r.ses.WorkspaceID, "turnId": out.Turn.ID,
		"userMessageId": out.Turn.UserMessageID, "server": r.api.Base(),
	})
	return nil
}

// follow reads the stream until the turn finishes. When ctx ends first, the turn is
// stopped and its end still awaited, for a while.
func (r *headlessRun) follow(ctx context.Context, items <-chan streamItem) error {
	done := ctx.Done()
	var giveUp <-chan time.Time
	for {
		select {
		case it, ok := <-items:
			switch {
			case !ok:
				return errors.New("the event stream ended before the turn finished")
			case it.err != nil:
				return it.err
			case it.notice != "":
				fmt.Fprintf(r.o.Stderr, "jean2 run: %s\n", it.notice)
			case it.hello != nil:
				for _, p := range it.hello.PendingAsks {
					r.decide(ctx, p)
				}
			case it.event != nil:
				if r.handle(ctx, *it.event) {
					return nil
				}
			}
		case <-done:
			done = nil
			r.stop(ctx, "")
			giveUp = time.After(headlessStopWait)
		case <-giveUp:
			return fmt.Errorf("the turn of session %s did not end within %s of being stopped: %w", r.ses.ID, headlessStopWait, context.Cause(ctx))
		}
	}
}

// handle acts on one event of the session; true when it is the end of this run's turn.
func (r *headlessRun) handle(ctx context.Context, ev store.Event) bool {
	r.emitEvent(ev)
	decode := func(v any) bool { return json.Unmarshal(ev.Payload, v) == nil }
	switch ev.Type {
	case hub.EventAskPending:
		var p hub.AskPendingPayload
		if decode(&p) {
			r.decide(ctx, p.Ask)
		}
	case harness.EventMessageCreated:
		var p harness.MessageEvent
		if decode(&p) {
			r.messageCreated(ctx, p.Message.Message)
		}
	case harness.EventTurnFinished:
		var p harness.TurnFinished
		if decode(&p) && p.TurnID == r.res.TurnID {
			r.res.Reason, r.res.Error, r.res.Rounds = p.Reason, p.Error, p.Rounds
			return true
		}
	}
	return false
}

// messageCreated notes this turn's user message, and counts the model's rounds: the
// round past MaxRounds stops the turn.
func (r *headlessRun) messageCreated(ctx context.Context, m store.Message) {
	switch {
	case m.ID == r.userMessageID:
		r.userSeq = m.Seq
	case m.Role == store.RoleAssistant && r.userSeq > 0:
		r.res.Rounds++
		if r.o.MaxRounds > 0 && r.res.Rounds > r.o.MaxRounds && !r.limited {
			r.limited = true
			fmt.Fprintf(r.o.Stderr, "jean2 run: stopping the turn: it reached --max-turns %d\n", r.o.MaxRounds)
			r.stop(ctx, "")
		}
	}
}

// stop stops the turn (once); the stream then brings turn.finished.
func (r *headlessRun) stop(ctx context.Context, why string) {
	if r.stopped {
		return
	}
	r.stopped = true
	if why != "" {
		fmt.Fprintf(r.o.Stderr, "jean2 run: stopping the turn: %s\n", why)
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := r.api.Call(sctx, http.MethodPost, r.sessionPath("/stop"), map[string]any{}, nil); err != nil {
		fmt.Fprintf(r.o.Stderr, "jean2 run: stop the turn of session %s: %v\n", r.ses.ID, err)
	}
}

// status sums the run up: a refusal outranks every other news, since the person who
// scripted the run must hear of it; then a limit reached; then the turn's own end.
func (r *headlessRun) status(ctx context.Context) string {
	switch {
	case len(r.res.Refusals) > 0:
		return StatusRefused
	case r.limited || errors.Is(context.Cause(ctx), context.DeadlineExceeded) ||
		r.res.Reason == harness.ReasonBudget || r.res.Reason == harness.ReasonCeiling:
		return StatusLimit
	case r.res.Reason == harness.ReasonDone:
		return StatusDone
	}
	return StatusFailed
}

// finalText is the text of the turn's last assistant message that has any ("" when the
// messages cannot be read: the events had the answer already).
func (r *headlessRun) finalText(ctx context.Context) string {
	var out struct {
		Messages []store.Message `json:"messages"`
	}
	path := r.sessionPath(fmt.Sprintf("/messages?after=%d&limit=1000", r.userSeq))
	if err := r.api.Call(ctx, http.MethodGet, path, nil, &out); err != nil {
		fmt.Fprintf(r.o.Stderr, "jean2 run: read the answer: %v\n", err)
		return ""
	}
	for i := len(out.Messages) - 1; i >= 0; i-- {
		m := out.Messages[i]
		if m.Role != store.RoleAssistant {
			continue
		}
		var b strings.Builder
		for _, p := range m.Parts {
			if p.Kind == store.PartText {
				b.WriteString(p.Text)
			}
		}
		if b.Len() > 0 {
			return b.String()
		}
	}
	return ""
}

func (r *headlessRun) sessionPath(rest string) string {
	return "/api/sessions/" + url.PathEscape(r.ses.ID) + rest
}

// emitEvent writes a session event as one JSON line, in JSON mode.
func (r *headlessRun) emitEvent(ev store.Event) {
	if !r.o.JSON {
		return
	}
	r.writeLine(ev)
}

// emit writes one of the run's own events, in JSON mode.
func (r *headlessRun) emit(typ string, payload any) {
	if !r.o.JSON {
		return
	}
	data, err := json.Marshal(payload)
	if err != nil {
		return
	}
	r.writeLine(struct {
		SessionID string          `json:"sessionId"`
		Type      string          `json:"type"`
		Payload   json.RawMessage `json:"payload"`
		CreatedAt time.Time       `json:"createdAt"`
	}{r.ses.ID, typ, data, time.Now().UTC()})
}

func (r *headlessRun) writeLine(v any) {
	data, err := json.Marshal(v)
	if err != nil {
		return
	}
	r.outMu.Lock()
	defer r.outMu.Unlock()
	_, _ = r.o.Stdout.Write(append(data, '\n'))
}

// decide answers one ask by the policy, at once.
func (r *headlessRun) decide(ctx context.Context, p hub.PendingAsk) {
	if r.handled[p.ID] {
		return
	}
	r.handled[p.ID] = true
	d := AskDecision{Refuse: "no policy was given"}
	if r.o.Decide != nil {
		d = r.o.Decide(ctx, p)
	}
	if d.Answer != nil {
		err := r.api.Call(ctx, http.MethodPost, r.sessionPath("/asks/"+url.PathEscape(p.ID)), map[string]any{"answer": d.Answer}, nil)
		if err == nil {
			return
		}
		if _, gone := isAPIError(err, "not_found"); gone {
			return // answered elsewhere, or timed out
		}
		d.Refuse = fmt.Sprintf("the prepared answer was not accepted: %v", err)
	}
	r.refuse(ctx, p, d.Refuse)
}

// refuse refuses an ask and reports it: on stderr in text mode, as run.refused in JSON.
func (r *headlessRun) refuse(ctx context.Context, p hub.PendingAsk, reason string) {
	ref := Refusal{AskID: p.ID, CallID: p.CallID, Tool: p.Tool, Ask: p.Ask, Reason: reason}
	r.res.Refusals = append(r.res.Refusals, ref)
	if r.o.JSON {
		r.emit(EventRunRefused, ref)
	} else {
		q := p.Ask.Question
		if q == "" {
			q = p.Ask.Capability
		}
		fmt.Fprintf(r.o.Stderr, "jean2 run: refused %s ask %q of tool %s: %s\n", p.Ask.Type, termtext.Line(q), termtext.Line(p.Tool), termtext.Line(reason))
	}
	var err error
	if p.Ask.Type == tool.AskPermission {
		err = r.api.Call(ctx, http.MethodPost, r.sessionPath("/asks/"+url.PathEscape(p.ID)), map[string]any{"answer": map[string]any{"granted": false}}, nil)
	} else {
		err = r.api.Call(ctx, http.MethodPost, r.sessionPath("/asks/"+url.PathEscape(p.ID)+"/refuse"), map[string]any{"reason": reason}, nil)
	}
	if err != nil && r.stillPending(ctx, p.ID) {
		// Never left to wait for its timeout: without a way to end the ask, the turn ends.
		r.stop(ctx, fmt.Sprintf("the refusal of ask %s did not reach the server: %v", p.ID, err))
	}
}

// stillPending reports whether the ask still waits (true when that cannot be read).
func (r *headlessRun) stillPending(ctx context.Context, askID string) bool {
	var out struct {
		Asks []hub.PendingAsk `json:"asks"`
	}
	if err := r.api.Call(ctx, http.MethodGet, r.sessionPath("/asks"), nil, &out); err != nil {
		return true
	}
	for _, a := range out.Asks {
		if a.ID == askID {
			return true
		}
	}
	return false
}

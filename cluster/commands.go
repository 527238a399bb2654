package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jean2/jean2/ask"
	"github.com/jean2/jean2/hub"
	"github.com/jean2/jean2/store"
)

// Command kinds.
const (
	CommandStop   = "stop"
	CommandAnswer = "answer"
)

// Outcome codes a command's target writes before its error text.
const (
	codeNoTurn        = "no_turn"
	codeNoSuchAsk     = "no_such_ask"
	codeInvalidAnswer = "invalid_answer"
	codeFailed        = "failed"
)

// ErrNoReply is wrapped when the instance a command went to did not run it in time: it is
// stopped, or too busy.
var ErrNoReply = errors.New("the instance running the turn did not reply")

// CommandWait bounds the wait for a command's outcome.
const CommandWait = 10 * time.Second

type answerBody struct {
	AskID  string          `json:"askId"`
	Answer json.RawMessage `json:"answer"`
}

// runCommands runs the commands sent to this instance.
func (n *Node) runCommands(ctx context.Context) {
	cmds, err := n.db.PendingCommands(ctx, n.id)
	if err != nil {
		if ctx.Err() == nil {
			n.log.Warn("read the commands sent to this instance", "error", err)
		}
		return
	}
	for _, c := range cmds {
		outcome := n.runCommand(ctx, c)
		if err := n.db.FinishCommand(context.WithoutCancel(ctx), c.ID, outcome); err != nil {
			n.log.Warn("mark a command done", "command", c.ID, "kind", c.Kind, "error", err)
		}
	}
}

// runCommand runs c and returns its outcome: "" or a code, a colon and what went wrong.
func (n *Node) runCommand(ctx context.Context, c store.Command) string {
	switch c.Kind {
	case CommandStop:
		if !n.turns.Stop(c.SessionID) {
			return codeNoTurn + ": no turn of session " + c.SessionID + " runs on instance " + n.id
		}
		n.log.Info("stopped a turn at another instance's request", "session", c.SessionID)
		return ""
	case CommandAnswer:
		var b answerBody
		if err := json.Unmarshal(c.Body, &b); err != nil {
			return codeFailed + ": the answer command's body is not {askId, answer}: " + err.Error()
		}
		err := n.events.Answer(ctx, c.SessionID, b.AskID, b.Answer)
		switch {
		case err == nil:
			return ""
		case errors.Is(err, hub.ErrNoSuchAsk):
			return codeNoSuchAsk + ": " + err.Error()
		case errors.Is(err, ask.ErrInvalidAnswer):
			return codeInvalidAnswer + ": " + err.Error()
		}
		return codeFailed + ": " + err.Error()
	}
	return codeFailed + ": unknown command kind " + c.Kind
}

// send gives a command to the instance holding the session's lease and waits for its
// outcome ("" or code: text).
func (n *Node) send(ctx context.Context, target, sessionID, kind string, body any) (string, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return "", err
	}
	c, err := n.db.SendCommand(ctx, store.Command{InstanceID: target, SessionID: sessionID, Kind: kind, Body: data})
	if err != nil {
		return "", err
	}
	wait := 5 * time.Millisecond
	deadline := time.Now().Add(CommandWait)
	for {
		got, err := n.db.CommandByID(ctx, c.ID)
		if err != nil {
			return "", err
		}
		if got.Done {
			return got.Error, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("%s in session %s: %w: instance %s, within %s", kind, sessionID, ErrNoReply, target, CommandWait)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%s in session %s: wait for instance %s: %w", kind, sessionID, target, context.Cause(ctx))
		case <-time.After(wait):
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// Stop stops the session's turn when another live instance runs it: it reports that
// instance and whether a turn was stopped there.
func (n *Node) Stop(ctx context.Context, sessionID string) (instance string, stopped bool, err error) {
	l, other, err := n.Holder(ctx, sessionID)
	if err != nil || !other || strings.HasSuffix(l.InstanceID, "/reaper") {
		return "", false, err
	}
	outcome, err := n.send(ctx, l.InstanceID, sessionID, CommandStop, struct{}{})
	if err != nil {
		return l.InstanceID, false, err
	}
	return l.InstanceID, outcome == "", nil
}

// PendingAsks lists the session's asks waiting for a person as its log tells them:
// ask.pending with no ask.resolved yet and not expired. An instance other than the one
// running the turn shows them so (the asks themselves wait in that one's memory).
func (n *Node) PendingAsks(ctx context.Context, sessionID string) ([]hub.PendingAsk, error) {
	evs, err := n.db.EventsOfTypes(ctx, sessionID, []string{hub.EventAskPending, hub.EventAskResolved}, 4*hub.DefaultMaxPendingAsks)
	if err != nil {
		return nil, err
	}
	resolved := map[string]bool{}
	for _, ev := range evs {
		if ev.Type == hub.EventAskResolved {
			var p hub.AskResolvedPayload
			if json.Unmarshal(ev.Payload, &p) == nil {
				resolved[p.AskID] = true
			}
		}
	}
	out := []hub.PendingAsk{}
	now := time.Now()
	for _, ev := range evs {
		if ev.Type != hub.EventAskPending {
			continue
		}
		var p hub.AskPendingPayload
		if json.Unmarshal(ev.Payload, &p) != nil || resolved[p.Ask.ID] || p.Ask.ExpiresAt.Before(now) {
			continue
		}
		out = append(out, p.Ask)
	}
	return out, nil
}

// MergePending adds to local (the hub's own asks) those of the log it lacks, oldest first.
func MergePending(local, fromLog []hub.PendingAsk) []hub.PendingAsk {
	out := slices.Clone(local)
	for _, p := range fromLog {
		if !slices.ContainsFunc(out, func(q hub.PendingAsk) bool { return q.ID == p.ID }) {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(a, b hub.PendingAsk) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out
}

// Answer answers an ask that waits on another instance: it is checked here against the ask
// its log holds, then sent to the instance running the turn, which hands it to the waiting
// tool. The errors are the hub's: hub.ErrNoSuchAsk, ask.ErrInvalidAnswer.
func (n *Node) Answer(ctx context.Context, sessionID, askID string, answer json.RawMessage) error {
	pending, err := n.PendingAsks(ctx, sessionID)
	if err != nil {
		return fmt.Errorf("answer ask %q of session %q: %w", askID, sessionID, err)
	}
	i := slices.IndexFunc(pending, func(p hub.PendingAsk) bool { return p.ID == askID })
	if i < 0 {
		return fmt.Errorf("answer ask %q of session %q: %w (already answered, timed out or cancelled, or never asked)", askID, sessionID, hub.ErrNoSuchAsk)
	}
	if len(answer) > hub.MaxAnswerBytes {
		return fmt.Errorf("answer ask %q of session %q: %w: the answer is %d bytes, more than the %d allowed", askID, sessionID, ask.ErrInvalidAnswer, len(answer), hub.MaxAnswerBytes)
	}
	if len(bytes.TrimSpace(answer)) == 0 {
		return fmt.Errorf("answer ask %q of session %q: %w: the answer is empty; send JSON of the ask's type", askID, sessionID, ask.ErrInvalidAnswer)
	}
	if _, err := ask.CheckAnswer(pending[i].Ask, answer); err != nil {
		return fmt.Errorf("answer ask %q of session %q: %w", askID, sessionID, err)
	}
	l, other, err := n.Holder(ctx, sessionID)
	if err != nil {
		return fmt.Errorf("answer ask %q of session %q: %w", askID, sessionID, err)
	}
	if !other {
		return fmt.Errorf("answer ask %q of session %q: %w (the instance that asked is gone; its turn is sealed)", askID, sessionID, hub.ErrNoSuchAsk)
	}
	outcome, err := n.send(ctx, l.InstanceID, sessionID, CommandAnswer, answerBody{AskID: askID, Answer: answer})
	if err != nil {
		return fmt.Errorf("answer ask %q of session %q: %w", askID, sessionID, err)
	}
	code, text, _ := strings.Cut(outcome, ": ")
	switch code {
	case "":
		n.log.Info("answered an ask waiting on another instance", "session", sessionID, "ask", askID, "holder", l.InstanceID)
		return nil
	case codeNoSuchAsk:
		return fmt.Errorf("%w (on instance %s: %s)", hub.ErrNoSuchAsk, l.InstanceID, text)
	case codeInvalidAnswer:
		return fmt.Errorf("%w (on instance %s: %s)", ask.ErrInvalidAnswer, l.InstanceID, text)
	}
	return fmt.Errorf("answer ask %q of session %q on instance %s: %s", askID, sessionID, l.InstanceID, text)
}

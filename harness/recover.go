package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jean2/jean2/store"
)

// sealCrash is what a message or call a killed server left unfinished is sealed with.
const sealCrash = "interrupted: the server stopped during this turn"

// recover seals what a killed server left half-written in every session: messages still
// streaming, text parts still streaming, calls pending or running. A session whose last turn
// never said it finished gets its turn.finished (reason "interrupted"), and its ledger filed
// (empty: what the turn recorded was in memory) unless one was filed already. Running it
// again finds nothing to do.
func (h *Harness) recover(ctx context.Context) error {
	wss, err := h.opts.Store.ListWorkspaces(ctx)
	if err != nil {
		return fmt.Errorf("harness: recover interrupted turns: %w", err)
	}
	var errs []error
	for _, ws := range wss {
		sessions, err := h.opts.Store.ListSessions(ctx, ws.ID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, s := range sessions {
			if err := h.recoverSession(ctx, s.ID); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("harness: recover interrupted turns: %w", err)
	}
	return nil
}

func (h *Harness) recoverSession(ctx context.Context, sessionID string) error {
	st := h.opts.Store
	msgs, err := st.ListMessages(ctx, sessionID)
	if err != nil {
		return err
	}
	var evs []store.NewEvent
	for mi := range msgs {
		m := &msgs[mi]
		for pi := range m.Parts {
			p := &m.Parts[pi]
			switch {
			case p.Kind == store.PartToolCall && (p.Status == store.StatusPending || p.Status == store.StatusRunning || p.Status == store.StatusStreaming):
				sealCall(p, sealCrash)
			case p.Status == store.StatusStreaming || p.Status == store.StatusPending || p.Status == store.StatusRunning:
				p.Status, p.Error = store.StatusError, sealCrash
			default:
				continue
			}
			if err := st.UpdatePart(ctx, *p); err != nil {
				return fmt.Errorf("session %s: seal part %s: %w", sessionID, p.ID, err)
			}
			evs = append(evs, partUpdated(*p))
		}
		if m.Status == store.StatusStreaming {
			m.Status, m.Error = store.StatusError, sealCrash
			if err := st.UpdateMessage(ctx, *m); err != nil {
				return fmt.Errorf("session %s: seal message %s: %w", sessionID, m.ID, err)
			}
			evs = append(evs, messageUpdated(*m))
		}
	}
	started, open, err := h.lastTurn(ctx, sessionID)
	if err != nil {
		return fmt.Errorf("session %s: %w", sessionID, err)
	}
	if open {
		fin, err := h.sealTurn(ctx, sessionID, started, msgs)
		if err != nil {
			return fmt.Errorf("session %s: turn %s: %w", sessionID, started.TurnID, err)
		}
		evs = append(evs, newEvent(EventTurnFinished, fin))
	}
	if len(evs) > 0 {
		if _, err := h.opts.Events.Publish(ctx, sessionID, evs...); err != nil {
			return fmt.Errorf("session %s: publish what was sealed: %w", sessionID, err)
		}
		h.log.Info("sealed a turn the server's stop interrupted", "session", sessionID, "turn", started.TurnID, "events", len(evs))
	}
	return nil
}

// sealTurn files the interrupted turn's ledger, if it has an answer to file it under and
// none is filed yet, and says how the turn finished.
func (h *Harness) sealTurn(ctx context.Context, sessionID string, started TurnStarted, msgs []store.Message) (TurnFinished, error) {
	fin := TurnFinished{TurnID: started.TurnID, Reason: ReasonInterrupted, Error: sealCrash, Changed: Summarize(nil)}
	from := len(msgs)
	for i, m := range msgs {
		if m.ID == started.UserMessageID {
			from = i + 1
			break
		}
	}
	var filed *store.Ledger
	var target, anyAnswer string
	for _, m := range msgs[from:] {
		if m.Role != store.RoleAssistant {
			continue
		}
		fin.Rounds++
		fin.Usage.InputTokens += m.TokensIn
		fin.Usage.OutputTokens += m.TokensOut
		anyAnswer = m.ID
		if m.Finish != finishDropped {
			target = m.ID
		}
		l, err := h.opts.Store.LedgerForMessage(ctx, m.ID)
		switch {
		case err == nil:
			filed = &l
		case !errors.Is(err, store.ErrNotFound):
			return fin, err
		}
	}
	if target == "" {
		target = anyAnswer
	}
	fin.MessageID = target
	if filed != nil {
		fin.MessageID = filed.MessageID
		fin.Changed = Summarize(filed.Changes)
		return fin, nil
	}
	if target == "" {
		return fin, nil
	}
	if _, err := h.opts.Store.FileLedger(ctx, sessionID, target, nil); err != nil && !errors.Is(err, store.ErrConflict) {
		return fin, err
	}
	return fin, nil
}

// lastTurn finds the session's last turn.started and whether a turn.finished follows it,
// reading the event log backwards in growing windows.
func (h *Harness) lastTurn(ctx context.Context, sessionID string) (TurnStarted, bool, error) {
	last, err := h.opts.Store.LastEventSeq(ctx, sessionID)
	if err != nil {
		return TurnStarted{}, false, err
	}
	finished := false
	window := int64(256)
	for end := last; end > 0; {
		from := max(0, end-window)
		evs, err := h.opts.Store.EventsAfter(ctx, sessionID, from, int(end-from))
		if err != nil {
			return TurnStarted{}, false, err
		}
		for i := len(evs) - 1; i >= 0; i-- {
			switch evs[i].Type {
			case EventTurnFinished:
				finished = true
			case EventTurnStarted:
				var ts TurnStarted
				if err := json.Unmarshal(evs[i].Payload, &ts); err != nil {
					return TurnStarted{}, false, fmt.Errorf("event %d (turn.started): %w", evs[i].Seq, err)
				}
				return ts, !finished, nil
			}
		}
		end = from
		window *= 2
	}
	return TurnStarted{}, false, nil
}

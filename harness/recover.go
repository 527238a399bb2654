package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/undo"
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
	if err := h.discardLeftovers(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("harness: recover interrupted turns: %w", err)
	}
	return nil
}

// discardLeftovers drops the undo snapshots of turns that are over (their turn.finished is
// out, or their session is gone) but were never filed nor discarded.
func (h *Harness) discardLeftovers(ctx context.Context) error {
	s := h.opts.Snapshots
	if s == nil {
		return nil
	}
	specs, err := s.Interrupted()
	if err != nil {
		return fmt.Errorf("list interrupted snapshots: %w", err)
	}
	for _, spec := range specs {
		ut, err := s.Resume(ctx, spec.ID)
		if err != nil {
			h.log.Warn("a leftover turn snapshot could not be resumed to discard it", "turn", spec.ID, "error", err)
			continue
		}
		if err := ut.Discard(); err != nil {
			h.log.Warn("discard a leftover turn snapshot", "turn", spec.ID, "error", err)
		}
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
// none is filed yet, and says how the turn finished. With snapshots, the turn's snapshot is
// taken up again: what changed on disk since the turn began becomes its ledger (what the
// turn recorded through ctx.fs was in memory only, but it is on disk too).
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
	ut := h.resume(ctx, started.TurnID)
	if filed != nil || target == "" {
		// Filed already (the crash came after), or nothing to file it under.
		discardTurn(h, ut)
		if filed != nil {
			fin.MessageID = filed.MessageID
			fin.Changed = Summarize(filed.Changes)
		}
		return fin, nil
	}
	if ut != nil {
		if _, err := ut.Finish(ctx, nil); err != nil {
			h.log.Error("find the changes of an interrupted turn", "session", sessionID, "turn", started.TurnID, "error", err)
		} else if l, err := ut.File(ctx, h.opts.Store, target); err != nil {
			h.log.Error("file the ledger of an interrupted turn", "session", sessionID, "turn", started.TurnID, "error", err)
		} else {
			fin.Changed = Summarize(l.Changes)
			return fin, nil
		}
		discardTurn(h, ut)
	}
	if _, err := h.opts.Store.FileLedger(ctx, sessionID, target, nil); err != nil && !errors.Is(err, store.ErrConflict) {
		return fin, err
	}
	return fin, nil
}

// resume takes up the undo snapshot of an interrupted turn, if there is one.
func (h *Harness) resume(ctx context.Context, turnID string) *undo.Turn {
	s := h.opts.Snapshots
	if s == nil || turnID == "" {
		return nil
	}
	specs, err := s.Interrupted()
	if err != nil {
		h.log.Warn("list interrupted snapshots", "error", err)
		return nil
	}
	for _, spec := range specs {
		if spec.ID != turnID {
			continue
		}
		ut, err := s.Resume(ctx, turnID)
		if err != nil {
			h.log.Warn("resume the snapshot of an interrupted turn", "turn", turnID, "error", err)
			return nil
		}
		return ut
	}
	return nil
}

func discardTurn(h *Harness, ut *undo.Turn) {
	if ut == nil {
		return
	}
	if err := ut.Discard(); err != nil {
		h.log.Warn("discard the snapshot of an interrupted turn", "turn", ut.ID(), "error", err)
	}
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

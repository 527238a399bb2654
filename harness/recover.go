package harness

import (
	"context"
	"errors"
	"fmt"

	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/undo"
)

// sealCrash is what a message or call a killed server left unfinished is sealed with.
const sealCrash = "interrupted: the server stopped during this turn"

// recover seals what a killed server left half-written: messages still streaming, text
// parts still streaming, calls pending or running (store.DB.UnfinishedMessages). A turn that
// never said it finished (store.DB.OpenTurns) gets its turn.finished (reason
// "interrupted"), and its ledger filed (empty: what the turn recorded was in memory) unless
// one was filed already. Each session's seals and events are one commit; running it again
// finds nothing to do. It reads only what is unfinished, however large the database.
func (h *Harness) recover(ctx context.Context) error {
	unfinished, err := h.opts.Store.UnfinishedMessages(ctx)
	if err != nil {
		return fmt.Errorf("harness: recover interrupted turns: %w", err)
	}
	open, err := h.opts.Store.OpenTurns(ctx)
	if err != nil {
		return fmt.Errorf("harness: recover interrupted turns: %w", err)
	}
	// Instances sharing the database: the turns other live instances run are theirs; only
	// those whose lease expired (or that never had one) are sealed here, the rest by the
	// cluster's reaper once their instance stops renewing them.
	var leased map[string]bool
	if h.opts.Leases != nil {
		if leased, err = h.opts.Leases.Leased(ctx); err != nil {
			return fmt.Errorf("harness: recover interrupted turns: %w", err)
		}
	}
	var order []string // sessions in the order found
	msgs := map[string][]store.Message{}
	turns := map[string]store.OpenTurn{}
	for _, m := range unfinished {
		if leased[m.SessionID] {
			continue
		}
		if _, seen := msgs[m.SessionID]; !seen {
			order = append(order, m.SessionID)
		}
		msgs[m.SessionID] = append(msgs[m.SessionID], m)
	}
	for _, t := range open {
		if leased[t.SessionID] {
			continue
		}
		if _, seen := msgs[t.SessionID]; !seen {
			order = append(order, t.SessionID)
			msgs[t.SessionID] = nil
		}
		turns[t.SessionID] = t
	}
	var errs []error
	for _, sessionID := range order {
		var turn *store.OpenTurn
		if t, ok := turns[sessionID]; ok {
			turn = &t
		}
		if err := h.recoverSession(ctx, sessionID, msgs[sessionID], turn); err != nil {
			errs = append(errs, err)
		}
	}
	if err := h.discardLeftovers(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := h.resumeRestores(ctx); err != nil {
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

// recoverSession seals a session's unfinished messages and its open turn, if any.
func (h *Harness) recoverSession(ctx context.Context, sessionID string, unfinished []store.Message, turn *store.OpenTurn) error {
	var seals ops
	for mi := range unfinished {
		m := &unfinished[mi]
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
			seals.add(updatePartOp(*p, "seal part "+p.ID))
		}
		if m.Status == store.StatusStreaming {
			m.Status, m.Error = store.StatusError, sealCrash
			sm := *m
			sm.Parts = nil
			seals.add(func(ctx context.Context, tx *store.Tx) ([]store.NewEvent, error) {
				if err := tx.UpdateMessage(ctx, sm); err != nil {
					return nil, fmt.Errorf("seal message %s: %w", sm.ID, err)
				}
				return []store.NewEvent{messageUpdated(sm)}, nil
			})
		}
	}
	turnID := ""
	if turn != nil {
		turnID = turn.TurnID
		fin, ledger, err := h.sealTurn(ctx, *turn)
		if err != nil {
			return fmt.Errorf("session %s: turn %s: %w", sessionID, turn.TurnID, err)
		}
		if ledger != nil {
			seals.add(ledger)
		}
		seals.add(func(ctx context.Context, tx *store.Tx) ([]store.NewEvent, error) {
			if err := tx.CloseTurn(ctx, sessionID, turn.TurnID); err != nil {
				return nil, err
			}
			return []store.NewEvent{newEvent(EventTurnFinished, fin)}, nil
		})
	}
	if len(seals) == 0 {
		return nil
	}
	if err := h.emitter(sessionID).commit(ctx, seals); err != nil {
		return fmt.Errorf("session %s: seal what the server's stop interrupted: %w", sessionID, err)
	}
	h.log.Info("sealed what the server's stop interrupted", "session", sessionID, "turn", turnID, "messages", len(unfinished))
	return nil
}

// sealTurn says how an interrupted turn finished and gives the write of its ledger, if it
// has an answer to file it under and none is filed yet. With snapshots, the turn's snapshot
// is taken up again: what changed on disk since the turn began becomes its ledger (what the
// turn recorded through ctx.fs was in memory only, but it is on disk too), filed here.
func (h *Harness) sealTurn(ctx context.Context, started store.OpenTurn) (TurnFinished, op, error) {
	fin := TurnFinished{TurnID: started.TurnID, Reason: ReasonInterrupted, Error: sealCrash, Changed: Summarize(nil)}
	// The turn's messages: those after its user's message.
	var msgs []store.Message
	if started.UserMessageID != "" {
		user, err := h.opts.Store.Message(ctx, started.UserMessageID)
		switch {
		case err == nil:
			if msgs, err = h.opts.Store.ListMessagesAfter(ctx, started.SessionID, user.Seq, 0); err != nil {
				return fin, nil, err
			}
		case !errors.Is(err, store.ErrNotFound):
			return fin, nil, err
		}
	}
	var filed *store.Ledger
	var target, anyAnswer string
	for _, m := range msgs {
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
			return fin, nil, err
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
		return fin, nil, nil
	}
	if ut != nil {
		if _, err := ut.Finish(ctx, nil); err != nil {
			h.log.Error("find the changes of an interrupted turn", "session", started.SessionID, "turn", started.TurnID, "error", err)
		} else if l, err := ut.File(ctx, h.opts.Store, target); err != nil {
			h.log.Error("file the ledger of an interrupted turn", "session", started.SessionID, "turn", started.TurnID, "error", err)
		} else {
			fin.Changed = Summarize(l.Changes)
			return fin, nil, nil
		}
		discardTurn(h, ut)
	}
	sessionID := started.SessionID
	return fin, func(ctx context.Context, tx *store.Tx) ([]store.NewEvent, error) {
		if _, err := tx.FileLedger(ctx, sessionID, target, nil); err != nil {
			return nil, fmt.Errorf("file the ledger of turn %s: %w", started.TurnID, err)
		}
		return nil, nil
	}, nil
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

// resumeRestores completes the restores a crash cut short (undo.Snapshots.CutShort) and
// tells each session's clients with restore.done, its report marked afterCrash. One that
// cannot be completed stays journaled: the session's next Restore tries again and says why.
func (h *Harness) resumeRestores(ctx context.Context) error {
	s := h.opts.Snapshots
	if s == nil {
		return nil
	}
	cut, err := s.CutShort()
	if err != nil {
		return fmt.Errorf("list restores cut short: %w", err)
	}
	var errs []error
	for _, j := range cut {
		report, ok, err := s.ResumeRestore(ctx, h.opts.Store, j.SessionID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			h.log.Warn("completed a restore a crash cut short", "session", j.SessionID, "message", j.MessageID,
				"restored", len(report.Restored), "recreated", len(report.Recreated), "removed", len(report.Removed))
			h.emitter(j.SessionID).emit(ctx, newEvent(EventRestoreDone, RestoreDone{MessageID: j.MessageID, Report: report}))
		}
	}
	return errors.Join(errs...)
}

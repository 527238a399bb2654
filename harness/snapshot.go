package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/tool"
	"github.com/jean2/jean2/undo"
)

// Snapshotter is what the harness needs of undo snapshots (*undo.Snapshots): a snapshot of
// the workspace at each turn's start, turns a crash interrupted, and Restore.
type Snapshotter interface {
	Begin(ctx context.Context, spec undo.TurnSpec) (*undo.Turn, error)
	Interrupted() ([]undo.TurnSpec, error)
	Resume(ctx context.Context, turnID string) (*undo.Turn, error)
	Restore(ctx context.Context, db *store.DB, sessionID, messageID string, opts undo.RestoreOptions) (undo.Report, error)
	CutShort() ([]undo.Journal, error)
	ResumeRestore(ctx context.Context, db *store.DB, sessionID string) (undo.Report, bool, error)
}

var _ Snapshotter = (*undo.Snapshots)(nil)

// ErrNoSnapshots is returned by Restore when the harness has no snapshots to restore from.
var ErrNoSnapshots = errors.New("restore is not available: the harness was set up without undo snapshots (Options.Snapshots)")

// Restore puts the workspace back as it was before the message (REFERENCE: "Restore to
// here"), through the undo snapshots; see undo.Snapshots.Restore. No turn may run in the
// session meanwhile (ErrBusy), and none starts until it is done. A restore that changed
// files publishes restore.done.
func (h *Harness) Restore(ctx context.Context, sessionID, messageID string, opts undo.RestoreOptions) (undo.Report, error) {
	if h.opts.Snapshots == nil {
		return undo.Report{}, ErrNoSnapshots
	}
	if err := h.reserve(ctx, sessionID); err != nil {
		return undo.Report{}, err
	}
	defer h.sendQueued(sessionID) // a message queued meanwhile goes once the session is free
	defer h.release(sessionID, nil)
	report, err := h.opts.Snapshots.Restore(ctx, h.opts.Store, sessionID, messageID, opts)
	if err != nil {
		return report, fmt.Errorf("restore session %s to message %s: %w", sessionID, messageID, err)
	}
	if !opts.DryRun {
		h.emitter(sessionID).emit(context.WithoutCancel(ctx), newEvent(EventRestoreDone, RestoreDone{MessageID: messageID, Report: report}))
	}
	return report, nil
}

// snapshot is a turn's undo snapshot being taken: Begin runs beside the first model call,
// and the turn waits for it before its first tool call.
type snapshot struct {
	done  chan struct{}
	turn  *undo.Turn // set when done; nil when snapshots are off or Begin failed
	err   error      // set when done: why Begin failed (the undo store is full, unwritable...)
	roots []string   // the roots Begin was to snapshot, when it failed
	// noUndo is set once the person chose to go on without undo: the turn's ledger then
	// says so (undo.UntrackedChange), for Restore. Only the turn's goroutine touches it.
	noUndo string
}

func (s *snapshot) wait() *undo.Turn {
	if s == nil {
		return nil
	}
	<-s.done
	return s.turn
}

// undoGate runs before the turn's first tool call. When the turn could not take its undo
// snapshot, the person is asked, before anything changes, whether to go on without undo;
// it returns why the calls may not run when they say no, cannot be asked, or do not answer.
func (t *turn) undoGate() string {
	s := t.snap
	if s == nil || s.err == nil || s.noUndo != "" {
		return ""
	}
	why := fmt.Sprintf("undo is not available for this turn: %v", s.err)
	var asker tool.Asker
	if a := t.h.opts.Askers; a != nil {
		asker = a.Asker(t.sessionID)
	}
	if asker == nil {
		return why + "; no one could be asked whether to go on without it, so no tool ran"
	}
	answer, err := asker.Ask(t.ctx, tool.Ask{Type: tool.AskConfirm, Target: "human", Risk: "high",
		Question:    "Undo is not available for this turn. Go on without undo?",
		Description: why + ". If you go on, Restore to before this turn cannot put back what its tools change other than through ctx.fs; it will say so and refuse unless partial."})
	var yes bool
	if err != nil || json.Unmarshal(answer, &yes) != nil {
		t.h.log.Warn("ask to go on without undo", "session", t.sessionID, "turn", t.id, "error", err)
		return why + "; the question whether to go on without it got no answer, so no tool ran"
	}
	if !yes {
		return why + "; you chose to stop, so no tool ran"
	}
	s.noUndo = s.err.Error()
	return ""
}

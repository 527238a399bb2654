package harness

import (
	"context"
	"errors"
	"fmt"

	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/undo"
)

// Snapshotter is what the harness needs of undo snapshots (*undo.Snapshots): a snapshot of
// the workspace at each turn's start, turns a crash interrupted, and Restore.
type Snapshotter interface {
	Begin(ctx context.Context, spec undo.TurnSpec) (*undo.Turn, error)
	Interrupted() ([]undo.TurnSpec, error)
	Resume(ctx context.Context, turnID string) (*undo.Turn, error)
	Restore(ctx context.Context, db *store.DB, sessionID, messageID string, opts undo.RestoreOptions) (undo.Report, error)
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
	done chan struct{}
	turn *undo.Turn // set when done; nil when snapshots are off or Begin failed
}

func (s *snapshot) wait() *undo.Turn {
	if s == nil {
		return nil
	}
	<-s.done
	return s.turn
}

package harness

import (
	"context"
	"fmt"

	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/tool"
)

// EventWorkspaceUpdated is published on the session's log when one of its tools widened or
// narrowed the workspace for good (ctx.addWorkspacePath, ctx.removeWorkspacePath).
const EventWorkspaceUpdated = "workspace.updated"

// WorkspaceUpdated is the payload of workspace.updated.
type WorkspaceUpdated struct {
	Workspace store.Workspace `json:"workspace"`
	// Added or Removed is the path that changed; CallID the call that changed it.
	Added   string `json:"added,omitempty"`
	Removed string `json:"removed,omitempty"`
	CallID  string `json:"callId,omitempty"`
}

// workspacePaths makes a call's change of its workspace's allowed paths last: the host
// asks the person first (widening) and applies the change to the rest of the call; this
// stores it in the workspace, from where every later round and turn reads it, and tells the
// session's clients.
type workspacePaths struct {
	t           *turn
	workspaceID string
	callID      string
}

var _ tool.WorkspacePaths = (*workspacePaths)(nil)

func (w *workspacePaths) AddWorkspacePath(ctx context.Context, path string) error {
	return w.change(ctx, path, true)
}

func (w *workspacePaths) RemoveWorkspacePath(ctx context.Context, path string) error {
	return w.change(ctx, path, false)
}

func (w *workspacePaths) change(_ context.Context, path string, add bool) error {
	t := w.t
	verb := "remove"
	if add {
		verb = "add"
	}
	// The turn's own writes context: the change is stored whole even if the call ends
	// meanwhile (the host has applied it to the call already).
	err := t.ev.commit(t.wctx, ops{func(ctx context.Context, tx *store.Tx) ([]store.NewEvent, error) {
		var ws store.Workspace
		var changed bool
		var err error
		if add {
			ws, changed, err = tx.AddAllowedPath(ctx, w.workspaceID, path)
		} else {
			ws, changed, err = tx.RemoveAllowedPath(ctx, w.workspaceID, path)
		}
		if err != nil || !changed {
			return nil, err
		}
		ev := WorkspaceUpdated{Workspace: ws, CallID: w.callID}
		if add {
			ev.Added = path
		} else {
			ev.Removed = path
		}
		return []store.NewEvent{newEvent(EventWorkspaceUpdated, ev)}, nil
	}})
	if err != nil {
		return fmt.Errorf("%s %s in workspace %s for good: %w", verb, path, w.workspaceID, err)
	}
	return nil
}

package host

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
)

// SessionEnder is a built-in that keeps something for a session beyond its calls (the
// shell's background commands, its remembered network prefixes) and lets it go when the
// session ends.
type SessionEnder interface {
	EndSession(ctx context.Context, sessionID string) error
}

// EndSession lets go of what the host keeps for a session that is over (deleted): each
// built-in's state for it (a dev server the shell started in the background is stopped)
// and the session's temporary folder (its overflow and output files, RemoveSessionTemp).
// Calls of the session still running are not stopped here: the caller ends the session's
// turn first.
func (h *Host) EndSession(ctx context.Context, workspaceID, sessionID string) error {
	var errs []error
	for _, t := range h.opts.Builtins {
		if e, ok := t.(SessionEnder); ok {
			if err := e.EndSession(ctx, sessionID); err != nil {
				errs = append(errs, fmt.Errorf("end session %s in built-in %s: %w", sessionID, t.Definition().Name, err))
			}
		}
	}
	// The session's tool workers stop, and what is left in its cgroup (a process a command
	// detached) ends with it.
	if key, err := tempKey(Call{SessionID: sessionID, Workspace: Workspace{ID: workspaceID}}, ""); err == nil && sessionID != "" {
		if err := h.endGroup(ctx, h.scopeGroup(filepath.Join(h.layout.Temp, key))); err != nil {
			errs = append(errs, fmt.Errorf("end session %s: stop its tool workers: %w", sessionID, err))
		}
	}
	if err := h.RemoveSessionTemp(workspaceID, sessionID); err != nil {
		errs = append(errs, fmt.Errorf("end session %s: remove its temporary folder: %w", sessionID, err))
	}
	return errors.Join(errs...)
}

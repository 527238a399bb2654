package host

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/jean2/jean2/internal/fsutil"
)

// SessionEnder is a built-in that keeps something for a session beyond its calls (the
// shell's background commands, its remembered network prefixes) and lets it go when the
// session ends.
type SessionEnder interface {
	EndSession(ctx context.Context, sessionID string) error
}

// EndSession lets go of what the host keeps for a session that is over (deleted): each
// built-in's state for it (a dev server the shell started in the background is stopped)
// and the session's temporary folder (its overflow and output files). Calls of the session
// still running are not stopped here: the caller ends the session's turn first.
func (h *Host) EndSession(ctx context.Context, sessionID string) error {
	var errs []error
	for _, t := range h.opts.Builtins {
		if e, ok := t.(SessionEnder); ok {
			if err := e.EndSession(ctx, sessionID); err != nil {
				errs = append(errs, fmt.Errorf("end session %s in built-in %s: %w", sessionID, t.Definition().Name, err))
			}
		}
	}
	if validID(sessionID) {
		dir := filepath.Join(h.layout.Temp, "sessions", sessionID) // as Layout.SessionTemp makes it
		h.temps.Delete(sessionID)
		h.tempQuota.over.Delete(dir)
		// Not following links a tool left in the folder (os.RemoveAll unlinks them).
		if err := fsutil.RemoveTree(dir); err != nil {
			errs = append(errs, fmt.Errorf("end session %s: remove its temporary folder: %w", sessionID, err))
		}
	}
	return errors.Join(errs...)
}

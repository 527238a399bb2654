package host

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jean2/jean2/internal/fsutil"
)

// Names of the temporary folders that are not a session's, under Layout.Temp/sessions.
const (
	workspaceTempPrefix = "workspace-" // sessionless calls of one workspace
	callTempPrefix      = "call-"      // a call with neither session nor workspace ID
)

// tempKey names the temporary folder, and so the confined workers' scope, of a call: its
// session's; for a sessionless call, its workspace's, shared by every sessionless call
// there (the API's Run form: a folder and a worker per call piled up under load); with
// neither, one of its own that dropCallTemp removes when the call ends.
func tempKey(call Call, callID string) string {
	switch {
	case call.SessionID != "":
		return call.SessionID
	case call.Workspace.ID != "":
		return workspaceTempPrefix + safeName(call.Workspace.ID)
	}
	return callTempPrefix + safeName(callID)
}

// dropCallTemp removes the temporary folder of a call that had one of its own, unless the
// call's overflow file is in it (the outcome names that file to its caller).
func (h *Host) dropCallTemp(call Call, out Outcome) {
	key := tempKey(call, out.CallID)
	if !strings.HasPrefix(key, callTempPrefix) || out.Overflow != nil {
		return
	}
	h.removeTemp(key)
}

// RemoveSessionTemp removes a session's temporary folder and what is in it: the server
// calls it when the session is deleted.
func (h *Host) RemoveSessionTemp(sessionID string) error {
	if !validID(sessionID) {
		return nil
	}
	return h.removeTemp(sessionID)
}

// RemoveWorkspaceTemp removes the temporary folder the workspace's sessionless calls
// share: the server calls it when the workspace is deleted.
func (h *Host) RemoveWorkspaceTemp(workspaceID string) error {
	return h.removeTemp(workspaceTempPrefix + safeName(workspaceID))
}

func (h *Host) removeTemp(key string) error {
	h.temps.Delete(key)
	h.tempQuota.over.Delete(filepath.Join(h.layout.Temp, "sessions", key))
	// RemoveTree removes links a worker left and never what they point to.
	return fsutil.RemoveTree(filepath.Join(h.layout.Temp, "sessions", key))
}

// staleCallTemp is the age past which a call's own temporary folder found at start is
// removed: another jean2 process on the same home may be running a call in a younger one.
const staleCallTemp = time.Hour

// cleanStaleTemps removes, at the host's start, the old folders of calls that had one of
// their own (earlier versions made one for every sessionless call and never removed it).
func (h *Host) cleanStaleTemps() {
	dir := filepath.Join(h.layout.Temp, "sessions")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), callTempPrefix) {
			continue
		}
		if fi, err := e.Info(); err != nil || time.Since(fi.ModTime()) < staleCallTemp {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if err := fsutil.RemoveTree(p); err != nil {
			h.log.Warn("remove a call's old temporary folder", "path", p, "error", err)
		}
	}
}

package host

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jean2/jean2/internal/fsutil"
	"github.com/jean2/jean2/sandbox"
)

// callTempPrefix names the folder, under Layout.Temp/sessions, of a call with neither
// session nor workspace ID.
const callTempPrefix = "call-"

// runsTemp is the folder, in a workspace's temporary folder, of its sessionless calls (a
// session's id never has a dot).
const runsTemp = ".runs"

// tempKey is the path under Layout.Temp of a call's temporary folder: its session's, in its
// workspace's folder; for a sessionless call, the one every sessionless call of the
// workspace shares (the API's Run form: a folder and a worker per call piled up under
// load); a session without workspace ID (jean2 tools run) has one under sessions/; a call
// with neither has one of its own that dropCallTemp removes when the call ends.
// A TempScope stands in for the workspace ID here (and nowhere else).
func tempKey(call Call, callID string) (string, error) {
	if call.SessionID != "" && !validID(call.SessionID) {
		return "", fmt.Errorf("session id %q is not valid: use letters, digits, '-' and '_' (at most 128)", call.SessionID)
	}
	group := tempGroup(call)
	switch {
	case group != "" && call.SessionID != "":
		return filepath.Join("workspaces", safeName(group), call.SessionID), nil
	case group != "":
		return filepath.Join("workspaces", safeName(group), runsTemp), nil
	case call.SessionID != "":
		return filepath.Join("sessions", call.SessionID), nil
	}
	return filepath.Join("sessions", callTempPrefix+safeName(callID)), nil
}

// tempGroup names the folder under Layout.Temp/workspaces that holds a call's temporary
// folder: its workspace's, else its TempScope's; "" for neither.
func tempGroup(call Call) string {
	if call.Workspace.ID != "" {
		return call.Workspace.ID
	}
	return call.TempScope
}

// runsKeep is how long what a sessionless call left in its workspace's .runs folder (an
// overflow file its caller may still read) is kept.
const runsKeep = time.Hour

// dropCallTemp cleans up after a sessionless call: a call with a folder of its own has it
// removed, unless the call's overflow file is in it (the outcome names that file to its
// caller); in a workspace's shared .runs folder, what is older than runsKeep goes, so the
// workspace's quota is not filled by runs nobody reads any more.
func (h *Host) dropCallTemp(call Call, out Outcome) {
	if call.SessionID != "" {
		return
	}
	key, err := tempKey(call, out.CallID)
	if err != nil {
		return
	}
	if tempGroup(call) != "" {
		h.pruneOld(filepath.Join(h.layout.Temp, key), runsKeep)
		return
	}
	if out.Overflow == nil {
		_ = h.removeTemp(key)
	}
}

// pruneOld removes the entries of dir last changed more than keep ago. dir is reached as an
// os.Root from the folder that holds it, so a link put in dir's place that leads out of it
// is refused, and nothing is listed or removed through one (before, when a workspace's
// workers could write the folder that holds .runs, the host deleted through such a link
// every old file of the place it led to; an unconfined tool still can).
func (h *Host) pruneOld(dir string, keep time.Duration) {
	parent, err := os.OpenRoot(filepath.Dir(dir))
	if err != nil {
		return
	}
	defer parent.Close()
	root, err := parent.OpenRoot(filepath.Base(dir))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			h.log.Warn("sessionless runs' folder not pruned", "path", dir, "error", err)
		}
		return
	}
	defer root.Close()
	d, err := root.Open(".")
	if err != nil {
		return
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return
	}
	for _, name := range names {
		fi, err := root.Lstat(name)
		if err != nil || time.Since(fi.ModTime()) < keep {
			continue
		}
		if err := root.RemoveAll(name); err != nil {
			h.log.Warn("remove an old file of sessionless runs", "path", filepath.Join(dir, name), "error", err)
		}
	}
}

// keepRealFolder makes sure dir is a folder and not a link (or anything else) in its place:
// what stands there instead is removed, never followed, and a folder made. A confined
// worker writes only inside its own session's folder, never the folder that holds it, but
// an unconfined tool (sandbox off) may put a link there; it costs one lstat when all is
// well.
func keepRealFolder(dir string) error {
	fi, err := os.Lstat(dir)
	if err == nil && fi.IsDir() {
		return nil
	}
	if err == nil {
		// RemoveTree unlinks a link and never what it points to.
		if err := fsutil.RemoveTree(dir); err != nil {
			return fmt.Errorf("a %s stands in place of the temporary folder %s and cannot be removed: %w", fi.Mode().Type(), dir, err)
		}
	} else if !os.IsNotExist(err) {
		return fmt.Errorf("temporary folder %s: %w", dir, err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return fmt.Errorf("make the temporary folder %s again: %w", dir, err)
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("the temporary folder %s keeps being replaced (by a tool of its workspace?): refused", dir)
	}
	return nil
}

// RemoveSessionTemp removes a session's temporary folder and what is in it, and unmounts
// its tmpfs: the server calls it when the session is deleted (EndSession).
func (h *Host) RemoveSessionTemp(workspaceID, sessionID string) error {
	key, err := tempKey(Call{SessionID: sessionID, Workspace: Workspace{ID: workspaceID}}, "")
	if err != nil || sessionID == "" {
		return nil
	}
	return h.removeTemp(key)
}

// RemoveWorkspaceTemp removes the workspace's temporary folder (its sessions' and its
// sessionless calls'): the server calls it when the workspace is deleted.
func (h *Host) RemoveWorkspaceTemp(workspaceID string) error {
	if workspaceID == "" {
		return nil
	}
	h.temps.Range(func(k, _ any) bool {
		if strings.HasPrefix(k.(string), filepath.Join("workspaces", safeName(workspaceID))+string(filepath.Separator)) {
			h.temps.Delete(k)
			h.tempQuota.over.Delete(filepath.Join(h.layout.Temp, k.(string)))
		}
		return true
	})
	dir := h.layout.WorkspaceTemp(workspaceID)
	h.forgetKept(dir)
	h.sb.removeGroup(h.scopeGroup(dir))
	if err := h.unmountBeneath(dir); err != nil {
		return err
	}
	return fsutil.RemoveTree(dir)
}

func (h *Host) removeTemp(key string) error {
	h.temps.Delete(key)
	dir := filepath.Join(h.layout.Temp, key)
	h.tempQuota.over.Delete(dir)
	h.forgetKept(dir)
	if tempScopeKey(key) == key {
		if err := h.unmountScope(dir); err != nil {
			return err
		}
	}
	// RemoveTree removes links a worker left and never what they point to.
	return fsutil.RemoveTree(dir)
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

// tempMounts are the temporary scopes (a session's folder, in its workspace's or alone, and
// a workspace's sessionless calls' .runs) the host made a tmpfs of SessionTempMB each:
// there the kernel holds the quota (a write past it fails with ENOSPC) and the host
// measures nothing. A mount goes with its folder (removeTemp), so an ended session's does
// not stay. A root host mounts in its own mount
// namespace; an ordinary user's, through its mounter, in the mount namespace jean2 runs in
// (SandboxOptions.TempMounter). Where it cannot mount (no mounter, no new mount API,
// sandbox off), it measures the folder (limits.go).
type tempMounts struct {
	mu      sync.Mutex
	mounted sync.Map // folder → whether this host mounted it (else it reused another's)
	// source names this host's mounts (sandbox.HostName), for the sweep of a later host.
	source string
	// refused says why the host could not mount, once it tried and failed: it does not try
	// again.
	refused string
}

// tempScopeKey is the part of a temporary folder's key (tempKey) that is mounted: the
// folder itself, a session's (in its workspace's folder or alone) or a workspace's
// sessionless calls' (.runs), which is what its workers may write and their TMPDIR; "" for
// a call's own folder (removed when the call ends). The workspace's folder that holds them
// is no mount: each session's quota is its own.
func tempScopeKey(key string) string {
	parts := strings.Split(filepath.ToSlash(key), "/")
	switch {
	case len(parts) == 3 && parts[0] == "workspaces":
		return key
	case len(parts) == 2 && parts[0] == "sessions" && !strings.HasPrefix(parts[1], callTempPrefix):
		return key
	}
	return ""
}

// mountScope makes the scope of key a tmpfs of SessionTempMB the first time it is needed
// (sandbox.MountTempFS), when the sandbox is on and the host may mount; a failure leaves the
// measured quota.
func (h *Host) mountScope(key string) {
	mb := h.sb.limits.SessionTempMB
	scope := tempScopeKey(key)
	if scope == "" || mb <= 0 || h.sb.status.Mode == sandbox.ModeOff {
		return
	}
	dir := filepath.Join(h.layout.Temp, scope)
	if _, ok := h.tempFS.mounted.Load(dir); ok {
		return
	}
	h.tempFS.mu.Lock()
	defer h.tempFS.mu.Unlock()
	if _, ok := h.tempFS.mounted.Load(dir); ok || h.tempFS.refused != "" {
		return
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return // tempFolder says why
	}
	if h.tempFS.source == "" {
		h.tempFS.source = sandbox.HostName()
	}
	reused, err := h.opts.Sandbox.TempMounter.Mount(h.layout.Temp, scope, h.tempFS.source, mb)
	if err != nil {
		h.tempFS.refused = err.Error()
		h.log.Warn("the temporary folders are not size-limited mounts: their quota is measured", "path", dir, "reason", err.Error())
		return
	}
	h.log.Debug("temporary folder mounted", "path", dir, "size_mb", mb, "reused", reused)
	h.tempFS.mounted.Store(dir, !reused)
}

// sweepTempMounts unmounts, when the host starts, the tmpfs mounts that hosts which are
// gone left on the temporary folders (their sessions' files go with them, as they go when
// a host closes); the next call makes a new one.
func (h *Host) sweepTempMounts() {
	root := h.layout.Temp
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real // mountinfo names where mounts really are
	}
	gone, err := sweepTempFS(root, sandbox.StaleHost, h.opts.Sandbox.TempMounter.Unmount)
	if len(gone) > 0 {
		h.log.Info("unmounted the temporary folders of a host that is gone", "paths", gone)
	}
	if err != nil {
		h.log.Warn("the temporary folders of a host that is gone", "error", err)
	}
}

// tempMounted reports whether dir is a tmpfs the host mounted, or reused and still there
// (its mounter may have closed since: then the folder is measured again).
func (h *Host) tempMounted(dir string) bool {
	owned, ok := h.tempFS.mounted.Load(dir)
	if !ok || owned.(bool) {
		return ok
	}
	if !isTempFS(dir) {
		h.tempFS.mounted.Delete(dir)
		return false
	}
	return true
}

// mountedHere reports whether dir is the root of a tmpfs this host mounted (and has not
// unmounted). Nothing can then stand in its place short of unmounting it, which needs the
// mount namespace's CAP_SYS_ADMIN (rename and rmdir of a mount point fail with EBUSY): the
// check of keepRealFolder, a stat on every call's path, is not needed.
func (h *Host) mountedHere(dir string) bool {
	owned, ok := h.tempFS.mounted.Load(dir)
	return ok && owned.(bool)
}

// unmountScope unmounts the tmpfs on dir, if the host has one there.
func (h *Host) unmountScope(dir string) error {
	if _, ok := h.tempFS.mounted.LoadAndDelete(dir); !ok {
		return nil
	}
	return h.opts.Sandbox.TempMounter.Unmount(dir)
}

// unmountBeneath unmounts the tmpfs mounts of the host in dir (a workspace's folder: its
// sessions' and .runs).
func (h *Host) unmountBeneath(dir string) error {
	var errs []error
	h.tempFS.mounted.Range(func(k, _ any) bool {
		if strings.HasPrefix(k.(string), dir+string(filepath.Separator)) {
			errs = append(errs, h.unmountScope(k.(string)))
		}
		return true
	})
	return errors.Join(errs...)
}

// unmountTemps unmounts every tmpfs the host mounted (Close); one it reused is its
// mounter's, which runs.
func (h *Host) unmountTemps() error {
	var errs []error
	h.tempFS.mounted.Range(func(k, owned any) bool {
		if owned.(bool) {
			errs = append(errs, h.unmountScope(k.(string)))
		}
		h.tempFS.mounted.Delete(k)
		return true
	})
	return errors.Join(errs...)
}

// TempQuota says how the temporary folders' quota (SessionTempMB) holds: "tmpfs" when
// the host mounted one, else "measured" and why it could not mount (not yet tried: "").
func (h *Host) TempQuota() string {
	h.tempFS.mu.Lock()
	defer h.tempFS.mu.Unlock()
	if h.tempFS.refused != "" {
		return "measured every 250 ms (no tmpfs: " + h.tempFS.refused + ")"
	}
	n := 0
	h.tempFS.mounted.Range(func(any, any) bool { n++; return true })
	if n > 0 {
		where := ""
		if h.opts.Sandbox.TempMounter != nil {
			where = " in jean2's own mount namespace"
		}
		return fmt.Sprintf("tmpfs of %d MiB per session (%d mounted%s)", h.sb.limits.SessionTempMB, n, where)
	}
	return ""
}

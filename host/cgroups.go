package host

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/jean2/jean2/runtime/worker"
	"github.com/jean2/jean2/sandbox"
	"github.com/jean2/jean2/tool"
)

// Session groups. Beneath the host's cgroup folders (one per hierarchy, sandbox.Pids and
// sandbox.Memory) every temporary scope has a group of its own, and the launcher puts each
// worker's and each command's group (w-<pid>, with its own per-process limits) in the
// group of the session it serves:
//
//	jean2-<host>/ws-<workspace>/                    a workspace's: no limit of its own
//	jean2-<host>/ws-<workspace>/s-<session>         a session's: SessionMemoryMB, SessionMaxTasks
//	jean2-<host>/ws-<workspace>/s-<session>/w-<pid> its tool workers and its commands
//	jean2-<host>/ws-<workspace>/runs                the workspace's sessionless calls: the same
//	jean2-<host>/s-<session>/                       a session without workspace: the same
//
// So the kernel holds the sum of all of a session's processes — its tool workers and the
// shell's commands, foreground and background — to the session's limits, whatever each
// one's own. A process is in one group, and a worker's memory stays charged to the group
// it was allocated in (charges do not move with a process: not in v2, and not in v1 on
// current kernels, which refuse move_charge_at_immigrate — EINVAL on 6.18, where a 70 MiB
// process moved left its 70 MiB in the old group), so a worker serves one session for its
// whole life: tool workers are pooled per scope, and the scope holds the session's group
// (poolScope.group). Moving a shared worker into each caller's group would leave what it
// allocated for one session charged to that session while it serves the next, and a
// worker serves several calls at once. A session's pools close once idle for the idle
// timeout (reapLaterLocked) and when the session ends (endGroup).

// scopeGroup is the group, relative to the host's cgroup folders, of a temporary folder
// (a call's or a worker scope's, Layout.Temp/…): "" for a call that has a folder of its
// own (no session, no workspace), whose processes go straight in the host's folders.
func (h *Host) scopeGroup(tempDir string) string {
	rel, err := filepath.Rel(h.layout.Temp, tempDir)
	if err != nil || tempDir == "" {
		return ""
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	switch {
	case len(parts) == 2 && parts[0] == "workspaces":
		return "ws-" + parts[1]
	case len(parts) == 3 && parts[0] == "workspaces" && parts[2] == runsTemp:
		return "ws-" + parts[1] + "/runs"
	case len(parts) == 3 && parts[0] == "workspaces":
		return "ws-" + parts[1] + "/s-" + parts[2]
	case len(parts) == 2 && parts[0] == "sessions" && !strings.HasPrefix(parts[1], callTempPrefix):
		return "s-" + parts[1]
	}
	return ""
}

// sessionLevel reports whether a group is a session's (its limits are the session's).
func sessionLevel(rel string) bool {
	last := rel[strings.LastIndexByte(rel, '/')+1:]
	return strings.HasPrefix(last, "s-") || last == "runs"
}

// cgroupPlace is a group's folder in each hierarchy ("" where the host has none).
type cgroupPlace struct {
	pids, memory string
}

// sessionGroups makes and remembers the host's scope groups.
type sessionGroups struct {
	mu   sync.Mutex
	made map[string]cgroupPlace
}

// group returns the folders of the group rel, making it (and the groups above it) with the
// limits of its level at first use; the host's folders for "".
func (sb *hostSandbox) group(rel string) (cgroupPlace, error) {
	place := cgroupPlace{}
	if sb.pids != nil {
		place.pids = sb.pids.Dir()
	}
	if sb.memory != nil {
		place.memory = sb.memory.Dir()
	}
	if rel == "" || (sb.pids == nil && sb.memory == nil) {
		return place, nil
	}
	g := &sb.groups
	g.mu.Lock()
	defer g.mu.Unlock()
	if p, ok := g.made[rel]; ok {
		return p, nil
	}
	tasks, memMB := 0, 0
	if sessionLevel(rel) {
		tasks, memMB = max(sb.limits.SessionMaxTasks, 0), max(sb.limits.SessionMemoryMB, 0)
	}
	var err error
	if sb.pids != nil {
		if place.pids, err = sb.pids.Group(rel, tasks); err != nil {
			return cgroupPlace{}, fmt.Errorf("session cgroup: %w", err)
		}
	}
	if sb.memory != nil {
		if place.memory, err = sb.memory.Group(rel, memMB); err != nil {
			return cgroupPlace{}, fmt.Errorf("session cgroup: %w", err)
		}
	}
	if g.made == nil {
		g.made = map[string]cgroupPlace{}
	}
	g.made[rel] = place
	return place, nil
}

// workerGroups puts a worker's groups (spec's, made by the launcher) in the group rel and
// gives them the per-worker limits: memory at DataMB and headroom, tasks at MaxTasks
// (RLIMIT_NPROC where the host has no pids cgroup). It returns rel's folders.
func (sb *hostSandbox) workerGroups(spec *sandbox.Spec, rel string) (cgroupPlace, error) {
	place, err := sb.group(rel)
	if err != nil {
		return cgroupPlace{}, err
	}
	if place.memory != "" && spec.DataMB > 0 {
		spec.MemoryCgroup, spec.MemoryMaxMB = place.memory, spec.DataMB+memoryHeadroomMB
	}
	if place.pids != "" && sb.limits.MaxTasks > 0 {
		spec.PidsCgroup, spec.PidsMax = place.pids, sb.limits.MaxTasks
	} else {
		spec.TaskLimit(sb.limits.MaxTasks, nil)
	}
	return place, nil
}

// watchGroups has a worker's launcher make the group rel again before each start
// (keepGroup), end what is left of the worker in its groups when it exits, and say when
// the kernel killed it for its memory group's limit (memMaxMB; 0: it has none).
func (sb *hostSandbox) watchGroups(l *worker.Launcher, rel string, place cgroupPlace, memMaxMB int) {
	if sb.pids == nil && sb.memory == nil {
		return
	}
	l.Exited = releaseIn(place)
	l.Prepare = sb.keepGroup(rel, l.Prepare)
	if memMaxMB > 0 && place.memory != "" {
		l.ExitNote = func(pid int) string {
			if sandbox.OutOfMemoryIn(place.memory, pid) {
				return fmt.Sprintf("the kernel killed it: out of memory in its memory cgroup (%d MiB, shared memory included)", memMaxMB)
			}
			return ""
		}
	}
}

// keepGroup makes sure, before every start of a worker, that the group rel its launcher
// joins is there (a session that ended, a workspace removed took it away while its pool
// lived on), then runs prepare.
func (sb *hostSandbox) keepGroup(rel string, prepare func() error) func() error {
	return func() error {
		if _, err := sb.group(rel); err != nil {
			return err
		}
		if prepare != nil {
			return prepare()
		}
		return nil
	}
}

// endGroup stops the serving tools' workers of the scopes in the group rel (a session
// that ends, a workspace removed) — they finish the calls they run, within ctx — then
// ends what is left in the group and removes it.
func (h *Host) endGroup(ctx context.Context, rel string) error {
	if rel == "" {
		return nil
	}
	var errs []error
	for _, v := range h.cat.Load().versions {
		if ft, ok := v.tool.(*folderTool); ok {
			for _, sp := range ft.takeGroupPools(rel) {
				errs = append(errs, sp.close(ctx))
			}
		}
	}
	h.sb.removeGroup(rel)
	return errors.Join(errs...)
}

// removeGroup ends what is left in the group rel and beneath it (a session that ended, a
// workspace removed) and removes the groups.
func (sb *hostSandbox) removeGroup(rel string) {
	if rel == "" {
		return
	}
	g := &sb.groups
	g.mu.Lock()
	defer g.mu.Unlock()
	for k := range g.made {
		if k == rel || strings.HasPrefix(k, rel+"/") {
			delete(g.made, k)
		}
	}
	if sb.memory != nil {
		sb.memory.Remove(rel)
	}
	if sb.pids != nil {
		sb.pids.Remove(rel)
	}
}

// SessionCgroups are the folders in which the launcher is to make a call's processes'
// groups (Spec.PidsCgroup, Spec.MemoryCgroup): its session's group.
type SessionCgroups func(c *tool.Context) (pids, memory string, err error)

// SessionCgrouper is a built-in that starts processes (the shell) and puts them in the
// host's session groups rather than in cgroup folders of its own: the host hands it
// SessionCgroups when it starts, when it has cgroups.
type SessionCgrouper interface {
	UseSessionCgroups(SessionCgroups)
}

// sessionCgroups is the host's SessionCgroups.
func (h *Host) sessionCgroups(c *tool.Context) (string, string, error) {
	place, err := h.sb.group(h.scopeGroup(c.TempDir))
	return place.pids, place.memory, err
}

// giveSessionCgroups hands the built-ins that want them the session groups.
func (h *Host) giveSessionCgroups() {
	if h.sb.pids == nil && h.sb.memory == nil {
		return
	}
	for _, t := range h.opts.Builtins {
		if g, ok := t.(SessionCgrouper); ok {
			g.UseSessionCgroups(h.sessionCgroups)
		}
	}
}

// releaseIn ends what is left of a worker in its groups of place.
func releaseIn(place cgroupPlace) func(pid int) {
	return func(pid int) {
		sandbox.ReleaseWorker(place.memory, pid)
		sandbox.ReleaseWorker(place.pids, pid)
	}
}

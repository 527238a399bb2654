//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Pids is a folder of a pids cgroup hierarchy that belongs to one host: every worker gets
// a group of its own in it (w-<pid>, made by the launcher), whose pids.max caps the tasks of
// the worker and of everything it starts. RLIMIT_NPROC cannot do that: it counts every task
// of the user and root ignores it. See cgroup_linux.go for the life of these folders.
type Pids struct {
	g hostGroup
}

// NewPids finds a pids hierarchy this process may make groups in (cgroup v1's pids
// controller, or a cgroup v2 folder with pids enabled for its children) and makes the host's
// folder in it. It first ends what hosts that are gone left there.
func NewPids() (*Pids, error) {
	g, err := makeHostGroup("pids", "pids.max")
	if err != nil {
		return nil, err
	}
	return &Pids{g: g}, nil
}

// Dir is the host's folder, the parent of the workers' groups.
func (p *Pids) Dir() string { return p.g.dir }

// Release ends whatever is left in a worker's group once the worker has exited — a process
// the tool started in a session of its own escapes the worker's process group but not its
// cgroup — and removes the group.
func (p *Pids) Release(pid int) { ReleaseWorker(p.g.dir, pid) }

// Group makes the group rel beneath the host's folder (a workspace's, "ws-x"; a session's,
// "ws-x/s-y": each level made when missing) and caps its tasks at max (0: no cap of its
// own). The cap holds for everything beneath: the workers' groups a launcher makes in it
// (Spec.PidsCgroup) count toward it whatever their own pids.max. It returns the folder.
func (p *Pids) Group(rel string, max int) (string, error) {
	var limits [][2]string
	if max > 0 {
		limits = pidsLimits(max)
	}
	return p.g.sub(rel, limits)
}

// Remove ends everything in the group rel and beneath it and removes those groups.
func (p *Pids) Remove(rel string) { p.g.remove(rel) }

// Close ends what is left in the workers' groups and removes them and the host's folder.
func (p *Pids) Close() error { return p.g.close() }

// pidsLimits are what the launcher writes in a worker's pids group.
func pidsLimits(max int) [][2]string {
	return [][2]string{{"pids.max", strconv.Itoa(max)}}
}

// sharesMemory reports whether the host's pids folder also gives its workers' groups the
// memory controller: the unified hierarchy, where a process belongs to one group for every
// controller, so one group per worker serves both.
func (p *Pids) sharesMemory() bool {
	if p == nil {
		return false
	}
	data, err := os.ReadFile(filepath.Join(p.g.dir, "cgroup.subtree_control"))
	return err == nil && slices.Contains(strings.Fields(string(data)), "memory")
}

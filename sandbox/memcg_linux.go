//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Memory is a host's folder in a memory cgroup hierarchy: the launcher makes each worker a
// group there whose limit caps all the memory the worker and what it starts use — private
// memory, but also shared memory (a memfd or an anonymous MAP_SHARED mapping), which
// RLIMIT_DATA does not count, and the kernel's memory on their behalf. Past the limit the
// kernel reclaims what it can (file pages) and then kills a process of the group.
type Memory struct {
	g      hostGroup
	shared bool // g is the Pids' folder, which the Pids release and close
}

// NewMemory finds a memory hierarchy this process may make groups in (cgroup v1's memory
// controller, or a cgroup v2 folder with memory enabled for its children) and makes the
// host's folder in it. It first ends what hosts that are gone left there. With pids in the
// unified hierarchy, where memory is too, the workers' groups of pids serve for both.
func NewMemory(pids *Pids) (*Memory, error) {
	if pids.sharesMemory() {
		return &Memory{g: pids.g, shared: true}, nil
	}
	bases, err := controllerBases("memory")
	if err != nil {
		return nil, err
	}
	// The file that shows the controller differs: memory.max (v2), memory.limit_in_bytes (v1).
	limitFile := "memory.max"
	for _, b := range bases {
		if _, err := os.Stat(filepath.Join(b, "memory.limit_in_bytes")); err == nil {
			limitFile = "memory.limit_in_bytes"
		}
	}
	g, err := makeHostGroup("memory", limitFile)
	if err != nil && limitFile != "memory.max" {
		g, err = makeHostGroup("memory", "memory.max")
	}
	if err != nil {
		return nil, err
	}
	return &Memory{g: g}, nil
}

// Dir is the host's folder, the parent of the workers' groups.
func (m *Memory) Dir() string { return m.g.dir }

// Release ends whatever is left in a worker's group once the worker has exited and removes
// the group.
func (m *Memory) Release(pid int) {
	if !m.shared {
		ReleaseWorker(m.g.dir, pid)
	}
}

// Group makes the group rel beneath the host's folder, as Pids.Group does, and caps all
// the memory of what it holds at mb MiB (0: no cap of its own), its workers' groups
// included. Files written in a tmpfs count toward the memory of the group of the process
// that wrote them, and stay counted in its parent once that group is gone.
func (m *Memory) Group(rel string, mb int) (string, error) {
	dir, err := m.g.sub(rel, nil)
	if err != nil || mb <= 0 {
		return dir, err
	}
	for _, l := range memoryLimits(dir, mb) {
		if err := os.WriteFile(filepath.Join(dir, l[0]), []byte(l[1]), 0); err != nil {
			return "", fmt.Errorf("cgroup %s: set %s to %s: %w", dir, l[0], l[1], err)
		}
	}
	return dir, nil
}

// Remove ends everything in the group rel and beneath it and removes those groups (the
// Pids' do it when they share the folder).
func (m *Memory) Remove(rel string) {
	if !m.shared {
		m.g.remove(rel)
	}
}

// Close ends what is left in the workers' groups and removes them and the host's folder.
func (m *Memory) Close() error {
	if m.shared {
		return nil
	}
	return m.g.close()
}

// OutOfMemory reports whether the kernel killed a process of a worker's group for going past
// its limit. It reads the group, so it is asked before Release removes it.
func (m *Memory) OutOfMemory(pid int) bool { return OutOfMemoryIn(m.g.dir, pid) }

// OutOfMemoryIn is OutOfMemory for a worker whose group the launcher made in parent (a
// folder Memory.Group returned).
func OutOfMemoryIn(parent string, pid int) bool {
	dir := filepath.Join(parent, "w-"+strconv.Itoa(pid))
	for _, f := range []string{"memory.events", "memory.oom_control"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, " "); ok && k == "oom_kill" && v != "0" {
				return true
			}
		}
	}
	return false
}

// memoryLimits are what the launcher writes in a worker's memory group: the limit, and no
// swap beyond it (the v1 memsw limit is set after the memory one, which it may not be
// below; files the kernel was built without are left out).
func memoryLimits(group string, mb int) [][2]string {
	bytes := strconv.FormatInt(int64(mb)<<20, 10)
	if _, err := os.Stat(filepath.Join(group, "memory.limit_in_bytes")); err == nil {
		out := [][2]string{{"memory.limit_in_bytes", bytes}}
		if _, err := os.Stat(filepath.Join(group, "memory.memsw.limit_in_bytes")); err == nil {
			out = append(out, [2]string{"memory.memsw.limit_in_bytes", bytes})
		}
		return out
	}
	out := [][2]string{{"memory.max", bytes}}
	if _, err := os.Stat(filepath.Join(group, "memory.swap.max")); err == nil {
		out = append(out, [2]string{"memory.swap.max", "0"})
	}
	return out
}

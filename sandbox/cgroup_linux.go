//go:build linux

package sandbox

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A host's cgroups: in each hierarchy that carries a controller it uses (pids, memory), a
// folder of its own, jean2-<pid>-t<start>-n<pid namespace>-<random>, beside the host's own
// group; in it every worker gets a group w-<worker pid>, made by the launcher, which moves
// itself (so the worker and everything the worker starts) into it. Between the two the host
// may make groups of its own (Pids.Group, Memory.Group: a workspace's, a session's), whose
// limits hold for the sum of the workers' groups beneath them: both hierarchies count
// hierarchically (v1 pids and memory on current kernels, and v2). The host ends what is left
// in a worker's group when the worker exits, and on start ends what hosts that died
// (kill -9, a crash) left in theirs: no process a tool started outlives its host for longer
// than that.

// hostGroup is a host's folder in one hierarchy.
type hostGroup struct {
	dir string
}

// makeHostGroup finds a hierarchy of this process's cgroups that carries controller and
// lets this process make groups in it (a v1 hierarchy of that controller, or the unified
// one where controller is enabled for children, which shows as limitFile in a new group),
// sweeps the folders of dead hosts there and makes this host's folder.
func makeHostGroup(controller, limitFile string) (hostGroup, error) {
	bases, err := controllerBases(controller)
	if err != nil {
		return hostGroup{}, err
	}
	var problems []string
	for _, base := range bases {
		sweepStale(base)
		dir := filepath.Join(base, HostName())
		if err := os.Mkdir(dir, 0o755); err != nil {
			problems = append(problems, err.Error())
			continue
		}
		enableChildren(dir)
		if _, err := os.Stat(filepath.Join(dir, limitFile)); err != nil {
			_ = os.Remove(dir)
			problems = append(problems, base+" has no "+controller+" controller for its children")
			continue
		}
		return hostGroup{dir: dir}, nil
	}
	if len(problems) == 0 {
		return hostGroup{}, fmt.Errorf("no %s cgroup hierarchy is mounted", controller)
	}
	return hostGroup{}, fmt.Errorf("no %s cgroup can be made: %s", controller, strings.Join(problems, "; "))
}

// enableChildren gives the groups made in dir the pids and memory controllers: in the
// unified hierarchy a group has a controller only when its parent enables it for its
// children, which a group holding no process of its own may (the host's folder, a
// workspace's or session's group). Nothing to do in a v1 hierarchy.
func enableChildren(dir string) {
	if _, err := os.Stat(filepath.Join(dir, "cgroup.subtree_control")); err == nil {
		for _, c := range []string{"+pids", "+memory"} {
			_ = os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(c), 0)
		}
	}
}

// sub makes the group rel beneath the host's folder ("ws-x/s-y": each level made when
// missing, and given the controllers for its children) and writes limits in the last one.
// A name w-… is a worker's and refused here, as is anything that would lead outside.
func (g hostGroup) sub(rel string, limits [][2]string) (string, error) {
	dir := g.dir
	for _, name := range strings.Split(rel, "/") {
		if name == "" || name == "." || name == ".." || strings.HasPrefix(name, "w-") || strings.ContainsAny(name, "\x00\n") {
			return "", fmt.Errorf("cgroup %q beneath %s: not a group name", rel, g.dir)
		}
		dir = filepath.Join(dir, name)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("cgroup %s: %w", dir, err)
		}
		enableChildren(dir)
	}
	for _, l := range limits {
		if err := os.WriteFile(filepath.Join(dir, l[0]), []byte(l[1]), 0); err != nil {
			return "", fmt.Errorf("cgroup %s: set %s to %s: %w", dir, l[0], l[1], err)
		}
	}
	return dir, nil
}

// remove ends everything in the group rel beneath the host's folder and in the groups
// beneath it, and removes them all.
func (g hostGroup) remove(rel string) {
	if rel == "" || strings.Contains(rel, "..") {
		return
	}
	killTree(filepath.Join(g.dir, rel))
}

// close ends what is left in the groups beneath the host's folder, removes them and the
// host's folder.
func (g hostGroup) close() error {
	killGroups(g.dir)
	if err := os.Remove(g.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove cgroup %s: %w", g.dir, err)
	}
	return nil
}

// ReleaseWorker ends whatever is left in the group a launcher made for the worker pid in
// parent (w-<pid>: the folder its spec named, a host's or one of Pids.Group's) once the
// worker has exited — a process the tool started in a session of its own escapes the
// worker's process group but not its cgroup — and removes the group.
func ReleaseWorker(parent string, pid int) {
	if parent == "" || pid <= 0 {
		return
	}
	killGroup(filepath.Join(parent, "w-"+strconv.Itoa(pid)))
}

// killGroup kills every process of a group and removes it. A process may fork while it is
// being killed (the pids controller bounds how many times); it is tried until the group is
// gone, for a bounded time.
func killGroup(dir string) {
	for attempt := 0; attempt < 50; attempt++ {
		if err := os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		// cgroup v2 kills a whole group in one write; v1 lists its members.
		if os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0) != nil {
			procs, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			for _, f := range strings.Fields(string(procs)) {
				if n, err := strconv.Atoi(f); err == nil && n > 0 {
					_ = syscall.Kill(n, syscall.SIGKILL)
				}
			}
		}
		time.Sleep(time.Duration(attempt+1) * time.Millisecond)
	}
}

// killGroups kills and removes every group beneath dir (workers' groups, and the
// workspaces' and sessions' groups that hold them), the deepest first.
func killGroups(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			killTree(filepath.Join(dir, e.Name()))
		}
	}
}

// killTree kills and removes the groups beneath dir, then dir itself.
func killTree(dir string) {
	killGroups(dir)
	killGroup(dir)
}

// sweepStale ends what the hosts that are gone left in base, and removes their folders.
func sweepStale(base string) {
	entries, _ := os.ReadDir(base)
	for _, e := range entries {
		if !e.IsDir() || !staleHostFolder(e.Name()) {
			continue
		}
		dir := filepath.Join(base, e.Name())
		killGroups(dir)
		_ = os.Remove(dir)
	}
}

// HostName is a new name for something of this process's as a host (its cgroup folders,
// the source of its tmpfs mounts): jean2-<pid>-t<start>-n<pid namespace>-<random>, which
// StaleHost reads back once the process is gone.
func HostName() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("jean2-%d-t%d-n%d-%s", os.Getpid(), processStart(os.Getpid()), pidNamespace(), hex.EncodeToString(b[:]))
}

// StaleHost reports whether a HostName names a host that no longer runs (staleHostFolder).
func StaleHost(name string) bool { return staleHostFolder(name) }

// staleHostFolder reports whether a folder jean2-<pid>[-t<start>-n<pid namespace>]-<random>
// belongs to a host that no longer runs: no process has that pid, or the one that has it
// started at another time (the pid was reused). A folder made in another pid namespace
// (whose pids mean nothing here) is left alone.
func staleHostFolder(name string) bool {
	rest, ok := strings.CutPrefix(name, "jean2-")
	if !ok {
		return false
	}
	parts := strings.Split(rest, "-")
	pid, err := strconv.Atoi(parts[0])
	if err != nil || pid <= 0 {
		return false
	}
	var start, ns uint64
	for _, p := range parts[1 : len(parts)-1] {
		switch {
		case strings.HasPrefix(p, "t"):
			start, _ = strconv.ParseUint(p[1:], 10, 64)
		case strings.HasPrefix(p, "n"):
			ns, _ = strconv.ParseUint(p[1:], 10, 64)
		}
	}
	if ns != 0 && ns != pidNamespace() {
		return false
	}
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	now := processStart(pid)
	return start != 0 && now != 0 && now != start
}

// pidNamespace identifies this process's pid namespace (the inode of /proc/self/ns/pid);
// 0 when it cannot be read.
func pidNamespace() uint64 {
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/ns/pid", &st); err != nil {
		return 0
	}
	return st.Ino
}

// processStart is when a process started, in clock ticks since boot (field 22 of
// /proc/PID/stat); 0 when it cannot be read.
func processStart(pid int) uint64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces and parentheses; fields count after its end.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 20 {
		return 0
	}
	n, _ := strconv.ParseUint(f[19], 10, 64)
	return n
}

// SweepStale ends every process that hosts which are gone (killed, crashed) left in their
// cgroups, in every hierarchy of this process's cgroups, and removes their folders. A host
// calls it when it starts, whether or not it caps its own workers with cgroups.
func SweepStale() {
	for _, c := range []string{"pids", "memory"} {
		bases, _ := controllerBases(c)
		for _, b := range bases {
			sweepStale(b)
		}
	}
}

// joinGroup makes the worker's group w-<pid> in parent, writes the limits limits gives for
// it (file → value, in order) and moves the calling process into it.
func joinGroup(parent string, limits func(group string) [][2]string) error {
	// Named after the pid the host knows; joined by the launcher's own (1 in a pid
	// namespace of its own), which is the one the kernel reads in cgroup.procs.
	dir := filepath.Join(parent, "w-"+strconv.Itoa(hostPid()))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("cgroup %s: %w", dir, err)
	}
	for _, l := range limits(dir) {
		if err := os.WriteFile(filepath.Join(dir, l[0]), []byte(l[1]), 0); err != nil {
			return fmt.Errorf("cgroup %s: set %s to %s: %w", dir, l[0], l[1], err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
		return fmt.Errorf("cgroup %s: join: %w", dir, err)
	}
	return nil
}

// controllerBases lists the folders of this process's own cgroups that may carry
// controller: its group in the v1 hierarchy of that controller, and its group in the
// unified one.
func controllerBases(controller string) ([]string, error) {
	groups, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("read /proc/self/cgroup: %w", err)
	}
	mounts, err := cgroupMounts()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(groups)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		rel := parts[2]
		var mount string
		if parts[0] == "0" && parts[1] == "" {
			mount = mounts["cgroup2"]
		} else {
			for _, c := range strings.Split(parts[1], ",") {
				if c == controller {
					mount = mounts[controller]
				}
			}
		}
		if mount != "" {
			out = append(out, filepath.Join(mount, rel))
		}
	}
	return out, nil
}

// cgroupMounts maps each v1 controller to its hierarchy's mount point and "cgroup2" to the
// unified hierarchy's.
func cgroupMounts() (map[string]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional…] - fstype source superoptions
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, x := range fields {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || len(fields) < sep+3 || len(fields) < 5 {
			continue
		}
		point, fstype, super := fields[4], fields[sep+1], fields[len(fields)-1]
		switch fstype {
		case "cgroup2":
			if _, ok := out["cgroup2"]; !ok {
				out["cgroup2"] = point
			}
		case "cgroup":
			for _, o := range strings.Split(super, ",") {
				if o == "pids" || o == "memory" {
					out[o] = point
				}
			}
		}
	}
	return out, sc.Err()
}

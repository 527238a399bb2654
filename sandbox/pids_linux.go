//go:build linux

package sandbox

import (
	"bufio"
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

// Pids is a folder of a pids cgroup hierarchy that belongs to one host: every worker gets
// a group of its own in it (w-<pid>, made by the launcher), whose pids.max caps the tasks of
// the worker and of everything it starts. RLIMIT_NPROC cannot do that: it counts every task
// of the user and root ignores it.
type Pids struct {
	dir string
}

// NewPids finds a pids hierarchy this process may make groups in (cgroup v1's pids
// controller, or a cgroup v2 folder with pids enabled for its children) and makes the host's
// folder in it. It also removes the empty folders of hosts that are gone.
func NewPids() (*Pids, error) {
	bases, err := pidsBases()
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, base := range bases {
		sweepStale(base)
		var b [6]byte
		_, _ = rand.Read(b[:])
		dir := filepath.Join(base, fmt.Sprintf("jean2-%d-%s", os.Getpid(), hex.EncodeToString(b[:])))
		if err := os.Mkdir(dir, 0o755); err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "pids.max")); err != nil {
			_ = os.Remove(dir)
			problems = append(problems, base+" has no pids controller for its children")
			continue
		}
		return &Pids{dir: dir}, nil
	}
	if len(problems) == 0 {
		return nil, errors.New("no pids cgroup hierarchy is mounted")
	}
	return nil, fmt.Errorf("no pids cgroup can be made: %s", strings.Join(problems, "; "))
}

// Dir is the host's folder, the parent of the workers' groups.
func (p *Pids) Dir() string { return p.dir }

// Release ends whatever is left in a worker's group once the worker has exited — a process
// the tool started in a session of its own escapes the worker's process group but not its
// cgroup — and removes the group.
func (p *Pids) Release(pid int) {
	dir := filepath.Join(p.dir, "w-"+strconv.Itoa(pid))
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

// Close removes the host's folder and the groups left in it (only empty ones can go).
func (p *Pids) Close() error {
	removeGroups(p.dir)
	if err := os.Remove(p.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove pids cgroup %s: %w", p.dir, err)
	}
	return nil
}

func removeGroups(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "w-") {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// sweepStale removes the folders of hosts whose process is gone.
func sweepStale(base string) {
	entries, _ := os.ReadDir(base)
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "jean2-")
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue // the host still runs (or it cannot be told)
		}
		dir := filepath.Join(base, e.Name())
		removeGroups(dir)
		_ = os.Remove(dir)
	}
}

// pidsBases lists the folders of this process's own cgroups that carry the pids
// controller: for v1 the pids hierarchy, for v2 the unified one.
func pidsBases() ([]string, error) {
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
				if c == "pids" {
					mount = mounts["pids"]
				}
			}
		}
		if mount != "" {
			out = append(out, filepath.Join(mount, rel))
		}
	}
	return out, nil
}

// cgroupMounts maps "pids" to the v1 pids hierarchy's mount point and "cgroup2" to the
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
				if o == "pids" {
					out["pids"] = point
				}
			}
		}
	}
	return out, sc.Err()
}

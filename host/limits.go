package host

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jean2/jean2/internal/jsonrpc"
	"github.com/jean2/jean2/runtime/worker"
	"github.com/jean2/jean2/tool"
)

// Limits cap what one worker or one call may use. A zero field takes its default; a
// negative one switches that limit off. A call that goes past a limit fails with a message
// naming it (a *LimitError).
type Limits struct {
	// MemoryMB caps each worker's memory (default 512): the private writable memory of the
	// process (RLIMIT_DATA, set by the sandbox launcher) and, for Node, the JavaScript heap
	// (--max-old-space-size, three quarters of it, so a runaway heap fails cleanly first). A
	// tool may set its own with package.json "jean2": {"memoryMB": N}: a lower one applies
	// at once, a higher one is part of its declaration and applies only once a person
	// approved it (`jean2 tools approve`); until then its calls are refused with the approval
	// message.
	MemoryMB int
	// MaxTasks caps the processes and threads of one worker and everything it starts
	// (default 256), through a pids cgroup where the host may make one, else RLIMIT_NPROC.
	MaxTasks int
	// MaxFileMB caps the size of every file a worker writes (RLIMIT_FSIZE, set by the
	// sandbox launcher; default 1024): a write past it fails with EFBIG.
	MaxFileMB int
	// MaxResultBytes caps the JSON of one result (default 8 MiB).
	MaxResultBytes int
	// MaxVisualizationBytes caps the JSON of one visualization (default 1 MiB).
	MaxVisualizationBytes int
	// MaxLogBytes and MaxLogLines cap the log and progress messages of one call (default
	// 1 MiB and 10,000 messages).
	MaxLogBytes int
	MaxLogLines int
	// MaxPendingAsks caps the asks of one call waiting for an answer at once (default 8).
	MaxPendingAsks int
	// SessionTempMB caps what one session's temporary folder holds (its ctx.fs.tempDir,
	// its workers' and commands' TMPDIR and /tmp; a workspace's sessionless calls share
	// one, .runs), in MiB (default 1024): each session its own. Where the host may mount
	// (Linux, sandbox on; root, or an ordinary user through its mounter) the folder is a
	// tmpfs of that size, made at the session's first call and unmounted when the session
	// ends (temp.go, tempmount_linux.go): a write past it fails with ENOSPC, from a
	// worker, a command or a background command alike. Elsewhere the host measures the
	// folder every 250 ms while a call runs and after it: a call that takes the folder past
	// the quota is stopped, and the session's next calls are refused with a message naming
	// it until files are removed from the folder; between two measurements, or after its
	// call returned (a background command), a process may write more.
	SessionTempMB int
	// SessionMemoryMB and SessionMaxTasks cap all the memory and the tasks (processes and
	// threads) of one session's processes together — its tool workers and its shell
	// commands, foreground and background — in one cgroup the kernel enforces (default 4096
	// MiB and 2048), whatever each worker's or command's own limits (cgroups.go): each
	// session has tool workers of its own. Files the session writes in a tmpfs temporary
	// folder count toward its memory. Where the host has no cgroups, only each worker's and
	// command's own limits hold.
	SessionMemoryMB int
	SessionMaxTasks int
}

// Default limits.
const (
	DefaultMemoryMB              = 512
	DefaultMaxTasks              = 256
	DefaultMaxFileMB             = 1024
	DefaultMaxResultBytes        = 8 << 20
	DefaultMaxVisualizationBytes = 1 << 20
	DefaultMaxLogBytes           = 1 << 20
	DefaultMaxLogLines           = 10_000
	DefaultMaxPendingAsks        = 8
	DefaultSessionTempMB         = 1024
	DefaultSessionMemoryMB       = 4096
	DefaultSessionMaxTasks       = 2048
)

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&l.MemoryMB, DefaultMemoryMB)
	def(&l.MaxTasks, DefaultMaxTasks)
	def(&l.MaxFileMB, DefaultMaxFileMB)
	def(&l.MaxResultBytes, DefaultMaxResultBytes)
	def(&l.MaxVisualizationBytes, DefaultMaxVisualizationBytes)
	def(&l.MaxLogBytes, DefaultMaxLogBytes)
	def(&l.MaxLogLines, DefaultMaxLogLines)
	def(&l.MaxPendingAsks, DefaultMaxPendingAsks)
	def(&l.SessionTempMB, DefaultSessionTempMB)
	def(&l.SessionMemoryMB, DefaultSessionMemoryMB)
	def(&l.SessionMaxTasks, DefaultSessionMaxTasks)
	return l
}

// declareLimits returns the declaration p with the limits a tool raises above the host's
// folded in, so that they are approved like the permissions (sandbox.Approvals keys an
// approval by tool, version and the declaration's digest): today the memory cap of
// package.json, when above the host's MemoryMB. Whatever the definition itself says of
// MemoryMB is replaced. p is not modified; nil when nothing is declared.
func declareLimits(p *tool.Permissions, ownMemoryMB int, limits Limits) *tool.Permissions {
	raised := 0
	if ownMemoryMB > 0 && limits.MemoryMB > 0 && ownMemoryMB > limits.MemoryMB {
		raised = ownMemoryMB
	}
	if p == nil && raised == 0 {
		return nil
	}
	var out tool.Permissions
	if p != nil {
		out = *p
	}
	out.MemoryMB = raised
	return &out
}

// tempEntryMin is what each file, folder or link in a session's temporary folder counts
// for at least: an empty file costs an inode and the walk that measures it, so a flood of
// them reaches the quota too (262,144 entries in the default 1 GiB).
const tempEntryMin = 4 << 10

// tempUsage is what dir holds: for each entry below it (links not followed), the largest
// of its size, its allocated blocks and tempEntryMin. It stops counting once past stop.
func tempUsage(dir string, stop int64) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while measured
			}
			return err
		}
		if p == dir {
			return nil
		}
		n := int64(tempEntryMin)
		if fi, err := d.Info(); err == nil {
			n = max(n, fi.Size())
			n = max(n, allocatedBytes(fi))
		}
		total += n
		if total > stop {
			return fs.SkipAll
		}
		return nil
	})
	return total, err
}

// sessionTempQuota is the sessions whose temporary folder was found over the quota.
type sessionTempQuota struct {
	over sync.Map // folder → struct{}
}

// checkSessionTemp refuses a call of a session whose temporary folder was over the quota
// after an earlier call and still is.
func (h *Host) checkSessionTemp(toolName, callID, dir string) error {
	if _, over := h.tempQuota.over.Load(dir); !over {
		return nil
	}
	if err := h.measureSessionTemp(dir); err != nil {
		var le *LimitError
		if errors.As(err, &le) {
			le.Tool, le.CallID = toolName, callID
		}
		return err
	}
	return nil
}

// ProcessStarter is a built-in whose calls start processes (the shell): they write where
// the sandbox lets them, the session's temporary folder among those, without ctx.fs.
type ProcessStarter interface {
	StartsProcesses() bool
}

// mayHaveWrittenTemp says whether a call may have added to the session's temporary folder,
// so it must be measured after: any call of a worker tool (it has node:fs within the
// sandbox), a built-in that starts processes, a call that changed files through ctx.fs or
// left an overflow file. A built-in that only read (read-file, grep) cannot have: walking
// the folder after each of those was a tenth of a read-file call's time.
func mayHaveWrittenTemp(v *version, out Outcome, changedFiles bool) bool {
	return changedFiles || out.Overflow != nil || mayWriteBesideFS(v)
}

// mayWriteBesideFS says whether the version's calls can write files other than through
// ctx.fs: a worker tool's (node:fs, within the sandbox), a built-in's that starts processes.
func mayWriteBesideFS(v *version) bool {
	if v.entry.Kind != "builtin" {
		return true
	}
	ps, ok := v.tool.(ProcessStarter)
	return ok && ps.StartsProcesses()
}

// measureSessionTemp measures the session's temporary folder after a call and remembers
// whether it is over the quota; the error says so.
func (h *Host) measureSessionTemp(dir string) error {
	quota := int64(h.sb.limits.SessionTempMB) << 20
	if quota <= 0 || dir == "" || h.tempMounted(dir) {
		return nil // a tmpfs of the quota's size holds it (mountScope)
	}
	used, err := tempUsage(dir, quota)
	if err != nil {
		// Unmeasurable (permissions changed under it): say so in the log, refuse nothing.
		h.log.Warn("session temp folder not measured", "dir", dir, "error", err)
		return nil
	}
	if used <= quota {
		h.tempQuota.over.Delete(dir)
		return nil
	}
	if _, was := h.tempQuota.over.LoadOrStore(dir, struct{}{}); !was {
		h.log.Warn("session temp folder over its quota: the session's calls are refused until files are removed", "dir", dir, "quota_mb", h.sb.limits.SessionTempMB)
	}
	return &LimitError{Limit: "SessionTempMB", What: fmt.Sprintf("the session's temporary folder quota of %d MB", h.sb.limits.SessionTempMB),
		Detail: fmt.Sprintf("%s holds more than that; the session's calls are refused until files are removed from it (ctx.fs.tempDir) or the session ends", dir)}
}

// tempPollInterval is how often the session's temporary folder is measured while a call
// runs: a call that ends sooner is measured once, after it.
const tempPollInterval = 250 * time.Millisecond

// watchSessionTemp measures the session's temporary folder every tempPollInterval while
// a call runs, and stops the call (cancel, with the LimitError as the cause) once the
// folder is over the quota. A call that ends within the interval costs one timer. stop
// ends the watch.
func (h *Host) watchSessionTemp(cancel context.CancelCauseFunc, toolName, callID, dir string) (stop func()) {
	if h.sb.limits.SessionTempMB <= 0 || dir == "" || h.tempMounted(dir) {
		return func() {}
	}
	var mu sync.Mutex
	stopped := false
	var t *time.Timer
	mu.Lock()
	defer mu.Unlock()
	t = time.AfterFunc(tempPollInterval, func() {
		if err := h.measureSessionTemp(dir); err != nil {
			var le *LimitError
			if errors.As(err, &le) {
				le.Tool, le.CallID = toolName, callID
			}
			cancel(err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			t.Reset(tempPollInterval)
		}
	})
	return func() {
		mu.Lock()
		stopped = true
		t.Stop()
		mu.Unlock()
	}
}

// LimitError says which limit a call went past.
type LimitError struct {
	Tool   string
	CallID string
	Limit  string // the Limits field, e.g. "MaxResultBytes"
	What   string // the limit in words, e.g. "the result size limit of 8388608 bytes"
	Detail string // what the call did, e.g. "the result was 9000000 bytes"
}

func (e *LimitError) Error() string {
	msg := fmt.Sprintf("tool %s: call %s exceeded %s (%s)", e.Tool, e.CallID, e.What, e.Limit)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// callLimits counts what one call of a worker tool uses and fails the call (through fail)
// the first time a count goes past its limit.
type callLimits struct {
	limits Limits
	tool   string
	callID string
	stop   worker.Stopper // set when the call starts

	logBytes atomic.Int64
	logLines atomic.Int64
	asks     atomic.Int64

	once sync.Once
}

func (l *callLimits) exceed(field, what, detail string) error {
	err := &LimitError{Tool: l.tool, CallID: l.callID, Limit: field, What: what, Detail: detail}
	l.once.Do(func() {
		if l.stop != nil {
			l.stop.Stop(err)
		}
	})
	return err
}

// logged counts one log or progress message of n bytes; false means it is over the limit
// and must be dropped.
func (l *callLimits) logged(n int) bool {
	if l == nil {
		return true
	}
	lines := l.logLines.Add(1)
	bytes := l.logBytes.Add(int64(n))
	if max := l.limits.MaxLogLines; max > 0 && lines > int64(max) {
		l.exceed("MaxLogLines", fmt.Sprintf("the log volume limit of %d log and progress messages per call", max), "")
		return false
	}
	if max := l.limits.MaxLogBytes; max > 0 && bytes > int64(max) {
		l.exceed("MaxLogBytes", fmt.Sprintf("the log volume limit of %d bytes of log and progress messages per call", max), "")
		return false
	}
	return true
}

// askStarted counts an ask waiting for its answer; done must be called when it is
// answered. An error means the call has too many asks pending.
func (l *callLimits) askStarted() (done func(), err error) {
	if l == nil {
		return func() {}, nil
	}
	n := l.asks.Add(1)
	done = func() { l.asks.Add(-1) }
	if max := l.limits.MaxPendingAsks; max > 0 && n > int64(max) {
		done()
		return nil, l.exceed("MaxPendingAsks", fmt.Sprintf("the limit of %d pending asks per call", max), fmt.Sprintf("ask number %d was made while %d were waiting for an answer", n, n-1))
	}
	return done, nil
}

// checkResultSize refuses a result whose JSON is over the limit.
func checkResultSize(limits Limits, toolName, callID string, n int) error {
	if max := limits.MaxResultBytes; max > 0 && n > max {
		return &LimitError{Tool: toolName, CallID: callID, Limit: "MaxResultBytes", What: fmt.Sprintf("the result size limit of %d bytes", max), Detail: fmt.Sprintf("the result was %d bytes of JSON; write large output to a file in ctx.fs.tempDir and return its path", n)}
	}
	return nil
}

// resultEnvelope is what a worker's answer line holds beside the result itself:
// {"jsonrpc":"2.0","id":N,"result":…}, with room to spare.
const resultEnvelope = 4 << 10

// resultLineLimit is the longest answer line a worker may send: the result limit and the
// envelope. A longer line is refused by its length before it is decoded, and only that
// much of it is ever held (jsonrpc.Options.MaxResponseSize); 0 when results are unlimited.
func resultLineLimit(limits Limits) int {
	if limits.MaxResultBytes <= 0 {
		return 0
	}
	return limits.MaxResultBytes + resultEnvelope
}

// resultTooLong is the limit error of a call whose answer was refused unread.
func resultTooLong(limits Limits, toolName, callID string, big *jsonrpc.ResponseTooLongError) error {
	detail := fmt.Sprintf("the worker's answer was more than %d bytes and was refused unread", big.Limit)
	if big.Known {
		detail = fmt.Sprintf("the worker's answer was %d bytes and was refused unread", big.Size)
	}
	return &LimitError{Tool: toolName, CallID: callID, Limit: "MaxResultBytes", What: fmt.Sprintf("the result size limit of %d bytes", limits.MaxResultBytes),
		Detail: detail + "; write large output to a file in ctx.fs.tempDir and return its path"}
}

// checkVisualizationSize refuses a visualization whose JSON is over the limit.
func checkVisualizationSize(limits Limits, toolName, callID string, n int) error {
	if max := limits.MaxVisualizationBytes; max > 0 && n > max {
		return &LimitError{Tool: toolName, CallID: callID, Limit: "MaxVisualizationBytes", What: fmt.Sprintf("the visualization size limit of %d bytes", max), Detail: fmt.Sprintf("the visualization was %d bytes of JSON", n)}
	}
	return nil
}

// outOfMemoryLine recognises what a runtime writes when it dies of its memory limit: V8's
// heap limit ("FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of
// memory"), a failed allocation in C++ (std::bad_alloc), Go ("fatal error: runtime: out of
// memory"), Bun ("Out of memory").
func outOfMemoryLine(line string) bool {
	l := strings.ToLower(line)
	for _, sign := range []string{"heap out of memory", "bad_alloc", "out of memory", "allocation failed", "cannot allocate memory"} {
		if strings.Contains(l, sign) {
			return true
		}
	}
	return false
}

func outOfMemory(lines ...[]string) bool {
	for _, ls := range lines {
		for _, l := range ls {
			if outOfMemoryLine(l) {
				return true
			}
		}
	}
	return false
}

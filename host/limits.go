package host

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jean2/jean2/runtime/worker"
)

// Limits cap what one worker or one call may use. A zero field takes its default; a
// negative one switches that limit off. A call that goes past a limit fails with a message
// naming it (a *LimitError).
type Limits struct {
	// MemoryMB caps each worker's memory (default 512): the private writable memory of the
	// process (RLIMIT_DATA, set by the sandbox launcher) and, for Node, the JavaScript heap
	// (--max-old-space-size, three quarters of it, so a runaway heap fails cleanly first). A
	// tool may set its own with package.json "jean2": {"memoryMB": N}.
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
	return l
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

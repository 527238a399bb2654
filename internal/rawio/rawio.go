// Package rawio reads and writes the pipes and sockets jean2 exchanges messages over (MCP's
// stdio, the host ⇄ worker protocol) without the Go runtime's system-call bookkeeping.
//
// An ordinary read or write of an *os.File goes through the runtime's entersyscall and
// exitsyscall. When the process was idle just before, entersyscall wakes the runtime's
// monitor thread (sysmon) from its deep sleep, and sysmon then polls every 20 µs until the
// process is idle again. For a server answering one small message at a time that is a futex
// wake and several nanosleeps per message: about a fifth of jean2's CPU in the MCP benchmark,
// on the path of every call. A read or write of a non-blocking descriptor never blocks, so
// the bookkeeping (which exists to hand the processor on while a thread is blocked in the
// kernel) buys nothing; this package issues those calls raw and leaves waiting to the
// runtime's poller as before.
package rawio

import (
	"errors"
	"io"
	"math/bits"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Reader returns a reader of r that reads raw when r is an *os.File the runtime polls (a
// pipe or socket in non-blocking mode), and r itself otherwise.
func Reader(r io.Reader) io.Reader {
	if rc := polled(r); rc != nil {
		return newReader(r.(*os.File), rc)
	}
	return r
}

// Writer returns a writer of w that writes raw when w is an *os.File the runtime polls, and
// w itself otherwise. Like os.File's Write, it waits for room and writes everything.
func Writer(w io.Writer) io.Writer {
	if rc := polled(w); rc != nil {
		return &writer{f: w.(*os.File), rc: rc}
	}
	return w
}

// Conn returns x's raw connection when x is an *os.File the runtime polls, for TryWrite.
func Conn(x any) syscall.RawConn { return polled(x) }

type reader struct {
	f     *os.File
	rc    syscall.RawConn
	start time.Time // the origin of pollUntil, on the monotonic clock

	// Set by Expect: until pollUntil (ns since start) an empty read polls again rather than
	// parking.
	pollUntil atomic.Int64
	polls     atomic.Int64 // empty reads that polled again (Polls)
	// Whether the last polls found what they expected in time, one bit each, newest
	// lowest (pollPays); and the Expects not polled for since polling stopped paying.
	hits    atomic.Uint32
	skipped atomic.Uint32

	// One read's state, and the callbacks that fill it, made once rather than per read
	// (closures passed to RawConn escape, and a read is on every message's path).
	mu      sync.Mutex
	op      readOp
	control func(fd uintptr)      // op.try, for RawConn.Control
	wait    func(fd uintptr) bool // op.try, reporting whether it is done, for RawConn.Read
}

type readOp struct {
	p     []byte
	n     int
	errno syscall.Errno
	got   bool // a read returned data, EOF or an error
}

// try reads once (again on EINTR); EAGAIN leaves got false.
func (op *readOp) try(fd uintptr) {
	for {
		m, errno := read(fd, op.p)
		switch errno {
		case 0:
			op.n, op.got = m, true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
		default:
			op.errno, op.got = errno, true
		}
		return
	}
}

func newReader(f *os.File, rc syscall.RawConn) *reader {
	r := &reader{f: f, rc: rc, start: time.Now()}
	r.hits.Store(pollHistory) // poll at first, as if every poll had paid
	r.control = r.op.try
	r.wait = func(fd uintptr) bool {
		r.op.try(fd)
		return r.op.got // else nothing yet: the poller waits for the descriptor
	}
	return r
}

func (r *reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.op = readOp{p: p}
	defer func() { r.op.p = nil }()
	for {
		if until := r.pollUntil.Load(); until != 0 {
			if int64(time.Since(r.start)) < until {
				// Expect's time lasts: try without the poller (Control notices a Close).
				if err := r.rc.Control(r.control); err != nil {
					return 0, fileError(err, func() error { _, err := r.f.Read(nil); return err })
				}
				if r.op.got {
					// What was expected came (or something before it): poll no longer,
					// unless Expect was called again meanwhile.
					if r.pollUntil.CompareAndSwap(until, 0) {
						r.notePoll(true)
					}
					break
				}
				r.polls.Add(1)
				// Let this process's other goroutines run: with one processor they would
				// wait. The thread itself keeps its CPU (see Expect).
				runtime.Gosched()
				continue
			}
			if r.pollUntil.CompareAndSwap(until, 0) {
				r.notePoll(false)
			}
		}
		err := r.rc.Read(r.wait)
		if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
			// Only Expect sets a read deadline (in the past): it woke this wait to poll.
			if err := r.f.SetReadDeadline(time.Time{}); err == nil {
				continue
			}
		}
		if err != nil {
			return r.op.n, fileError(err, func() error { _, err := r.f.Read(nil); return err })
		}
		break
	}
	if r.op.errno != 0 {
		return r.op.n, &os.PathError{Op: "read", Path: r.f.Name(), Err: r.op.errno}
	}
	if r.op.n == 0 {
		return 0, io.EOF
	}
	return r.op.n, nil
}

// Expect tells a reader made by Reader that data is due within about d: until then a read
// that finds nothing tries again (letting the process's other goroutines run between tries)
// instead of parking in the runtime's poller, and a read parked already is woken to do so.
// It reports whether r is such a reader; for any other reader it does nothing.
//
// Why: a process that parks is woken by the kernel when the data comes, and on a virtual
// machine waking a CPU that went idle costs tens of microseconds (the hypervisor must run it
// again), where a process that is still running simply reads. For a request whose answer
// is expected in a fraction of a millisecond (a tool worker's answer to a quick call) that
// wake-up is a large part of the round trip. The budget bounds the CPU spent when the
// answer takes longer. The thread does not yield its CPU between tries: sched_yield hands it
// to any task ready on that CPU, a batch job included, for up to a time slice, which cost
// more (bench/mcp with the CPUs kept busy by idle-class spinners: 2,259–3,041 calls/s with
// the yield, 3,765–4,194 without) than it saved when the peer was woken on the same CPU
// (there the kernel's wake-up preemption lets it run).
//
// Expect with d ≤ 0 ends the polling: a read polling now parks.
//
// Expect uses the file's read deadline to wake a parked read, so the owner of the file must
// not set read deadlines of its own.
func Expect(r io.Reader, d time.Duration) bool {
	rr, ok := r.(*reader)
	if !ok {
		return false
	}
	if d <= 0 {
		rr.pollUntil.Store(0) // a read polling now stops and parks
		return true
	}
	if !rr.pollPays() {
		return true
	}
	rr.pollUntil.Store(int64(time.Since(rr.start) + d))
	_ = rr.f.SetReadDeadline(time.Unix(1, 0)) // fails only once the file is closed
	return true
}

// Polling pays while what is expected comes within the time given: a poll that runs out
// holds a CPU for nothing, and on a loaded machine it is the CPU the peer (or whatever the
// peer waits for) needed. bench/mcp at load average ~10, where the client's next call
// mostly came after the 200 µs poll: p50 285 µs polling for every call, 164 µs never
// polling (the TypeScript SDK's server: 211 µs). So a reader polls while at least
// pollHitsNeeded of its last pollHistory polls found their data in time, and otherwise
// only once in pollProbe Expects, to learn whether the peer got quicker.
const (
	pollHistory    = 0xff // the last 8 polls
	pollHitsNeeded = 6
	pollProbe      = 16
)

// pollPays reports whether to poll for what an Expect announces (see pollHistory).
func (r *reader) pollPays() bool {
	if bits.OnesCount32(r.hits.Load()&pollHistory) >= pollHitsNeeded {
		return true
	}
	return r.skipped.Add(1)%pollProbe == 0
}

// notePoll records whether a poll found its data before its time ran out.
func (r *reader) notePoll(inTime bool) {
	h := r.hits.Load() << 1
	if inTime {
		h |= 1
	}
	r.hits.Store(h & pollHistory)
}

type writer struct {
	f  *os.File
	rc syscall.RawConn
}

func (w *writer) Write(p []byte) (int, error) {
	var n int
	var werr error
	err := w.rc.Write(func(fd uintptr) bool {
		m, errno := writeSome(fd, p[n:])
		n += m
		switch errno {
		case 0:
			return true
		case syscall.EAGAIN:
			return false // full: the poller waits for room
		default:
			werr = errno
			return true
		}
	})
	if err != nil {
		return n, fileError(err, func() error { _, err := w.f.Write(nil); return err })
	}
	if werr != nil {
		return n, &os.PathError{Op: "write", Path: w.f.Name(), Err: werr}
	}
	return n, nil
}

// fileError turns the poller's own error (the file was closed, say) into the one os.File
// returns, so that callers can test for os.ErrClosed as they would: an empty read or write
// of the file fails the same way and os wraps that error. The poller's error is kept when
// the file does not fail again.
func fileError(err error, again func() error) error {
	if err2 := again(); err2 != nil {
		return err2
	}
	return err
}

// TryWrite writes what fits of b without waiting, in one pass: n < len(b) with a nil error
// means the descriptor is full.
func TryWrite(rc syscall.RawConn, b []byte) (int, error) {
	var n int
	var werr error
	err := rc.Write(func(fd uintptr) bool {
		m, errno := writeSome(fd, b)
		n = m
		if errno != 0 && errno != syscall.EAGAIN { // EAGAIN: full, the caller decides who waits
			werr = errno
		}
		return true
	})
	if err != nil {
		return n, err
	}
	return n, werr
}

// writeSome writes p to fd until all of it is written, the descriptor is full (EAGAIN; a
// write that takes nothing counts as full too) or a write fails.
func writeSome(fd uintptr, p []byte) (int, syscall.Errno) {
	n := 0
	for n < len(p) {
		m, errno := write(fd, p[n:])
		switch {
		case errno == syscall.EINTR:
			continue
		case errno != 0:
			return n, errno
		case m == 0:
			return n, syscall.EAGAIN
		}
		n += m
	}
	return n, 0
}

// polled returns x's raw connection when x is an *os.File in non-blocking mode (os then
// registers it with the poller; a regular file never answers EAGAIN, so it is safe too).
// A blocking descriptor is left alone: a raw read of it would hold a processor the runtime
// believes is running Go code.
func polled(x any) syscall.RawConn {
	f, ok := x.(*os.File)
	if !ok {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	nonblocking := false
	if err := rc.Control(func(fd uintptr) { nonblocking = isNonblocking(fd) }); err != nil || !nonblocking {
		return nil
	}
	return rc
}

// Polls reports how many times reads of r found nothing and tried again under Expect (0 for
// a reader Reader did not make): a diagnostic, and how tests see that polling happened.
func Polls(r io.Reader) int64 {
	if rr, ok := r.(*reader); ok {
		return rr.polls.Load()
	}
	return 0
}

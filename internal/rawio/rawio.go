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
	"io"
	"os"
	"syscall"
)

// Reader returns a reader of r that reads raw when r is an *os.File the runtime polls (a
// pipe or socket in non-blocking mode), and r itself otherwise.
func Reader(r io.Reader) io.Reader {
	if rc := polled(r); rc != nil {
		return &reader{f: r.(*os.File), rc: rc}
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
	f  *os.File
	rc syscall.RawConn
}

func (r *reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var rerr error
	err := r.rc.Read(func(fd uintptr) bool {
		for {
			m, errno := read(fd, p)
			switch errno {
			case 0:
				n = m
				return true
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // nothing yet: the poller waits for the descriptor
			default:
				rerr = errno
				return true
			}
		}
	})
	if err != nil {
		return n, fileError(err, func() error { _, err := r.f.Read(nil); return err })
	}
	if rerr != nil {
		return n, &os.PathError{Op: "read", Path: r.f.Name(), Err: rerr}
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
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

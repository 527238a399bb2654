//go:build unix

package mcpserver

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// pollable returns x as a file the Go runtime's poller waits on, when f is a pipe or a
// socket opened in blocking mode (an MCP client starts jean2 mcp with blocking pipes or
// socketpairs for its stdin and stdout). Reading a blocking file ties up an OS thread in
// read(2); when a message arrives that thread has to get the scheduler's processor back
// from whoever holds it, which on every tools/call cost several thread switches and about
// 200 µs (bench/mcp). A polled file wakes the goroutine that waits on it directly.
//
// The non-blocking mode belongs to the open file description, which f shares with its
// duplicate, so undo restores blocking mode; it also closes the duplicate, which ends a read
// waiting on it. Any other *os.File, and any reader or writer that is not a file, comes back
// as nil.
func pollable(x any) (*os.File, func()) {
	f, ok := x.(*os.File)
	if !ok {
		return nil, nil
	}
	raw, err := f.SyscallConn()
	if err != nil {
		return nil, nil
	}
	var dup int
	var dupErr error
	// Control, unlike Fd, leaves the file's mode alone.
	ctlErr := raw.Control(func(fd uintptr) {
		dup, dupErr = makePollable(int(fd))
	})
	if err := errors.Join(ctlErr, dupErr); err != nil || dup < 0 {
		return nil, nil
	}
	polled := os.NewFile(uintptr(dup), f.Name())
	undo := func() {
		_ = polled.Close()
		_ = raw.Control(func(fd uintptr) { _ = unix.SetNonblock(int(fd), false) })
	}
	return polled, undo
}

// makePollable duplicates fd and sets the shared description non-blocking, when fd is a pipe
// or socket in blocking mode; otherwise it returns -1 and no error.
func makePollable(fd int) (int, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return -1, err
	}
	if kind := st.Mode & unix.S_IFMT; kind != unix.S_IFIFO && kind != unix.S_IFSOCK {
		return -1, nil // a terminal, a regular file: not polled (or not worth it)
	}
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return -1, err
	}
	if flags&unix.O_NONBLOCK != 0 {
		return -1, nil // already non-blocking: os made it pollable, or someone else uses it so
	}
	// Redirected together with stderr (2>&1): log lines written to stderr, which Go does not
	// poll, could then be cut short by EAGAIN on a full pipe.
	var errSt unix.Stat_t
	if fd != 2 && unix.Fstat(2, &errSt) == nil && errSt.Dev == st.Dev && errSt.Ino == st.Ino {
		return -1, nil
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return -1, err
	}
	if err := unix.SetNonblock(dup, true); err != nil {
		_ = unix.Close(dup)
		return -1, err
	}
	return dup, nil
}

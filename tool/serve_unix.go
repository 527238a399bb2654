//go:build unix

package tool

import (
	"fmt"
	"os"
	"syscall"
)

// protocolFiles opens the pipes the host gives a worker: fd 3 (host → worker) and fd 4
// (worker → host). They are switched to non-blocking mode first, which makes os.NewFile
// return files the runtime poller serves: closing one then ends a read in progress, so the
// worker can stop without waiting for the host to write.
func protocolFiles() (in, out *os.File, err error) {
	files := make([]*os.File, 0, 2)
	for _, fd := range []int{3, 4} {
		// Without the host's pipes, fd 3 and 4 are often the runtime's own poller
		// descriptors: anything but a pipe or a socket is not the protocol.
		var st syscall.Stat_t
		err := syscall.Fstat(fd, &st)
		if err == nil && st.Mode&syscall.S_IFMT != syscall.S_IFIFO && st.Mode&syscall.S_IFMT != syscall.S_IFSOCK {
			err = fmt.Errorf("it is not a pipe")
		}
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			return nil, nil, fmt.Errorf("tool.Serve: file descriptor %d is not the host's pipe (%v): this program is a jean2 tool worker, started by the jean2 host, which talks to it on fd 3 and fd 4; run it with `jean2 tools run <name>`", fd, err)
		}
		if err := syscall.SetNonblock(fd, true); err != nil {
			for _, f := range files {
				f.Close()
			}
			return nil, nil, fmt.Errorf("tool.Serve: fd %d: %w", fd, err)
		}
		files = append(files, os.NewFile(uintptr(fd), fmt.Sprintf("jean2-protocol-fd%d", fd)))
	}
	return files[0], files[1], nil
}

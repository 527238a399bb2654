//go:build !unix

package tool

import (
	"fmt"
	"os"
)

// protocolFiles opens the pipes the host gives a worker: fd 3 (host → worker) and fd 4
// (worker → host).
func protocolFiles() (in, out *os.File, err error) {
	files := make([]*os.File, 0, 2)
	for _, fd := range []uintptr{3, 4} {
		f := os.NewFile(fd, fmt.Sprintf("jean2-protocol-fd%d", fd))
		if f == nil {
			return nil, nil, fmt.Errorf("tool.Serve: file descriptor %d is not open: this program is a jean2 tool worker, started by the jean2 host", fd)
		}
		if _, err := f.Stat(); err != nil {
			for _, g := range files {
				g.Close()
			}
			return nil, nil, fmt.Errorf("tool.Serve: file descriptor %d is not open (%v): this program is a jean2 tool worker, started by the jean2 host, which talks to it on fd 3 and fd 4", fd, err)
		}
		files = append(files, f)
	}
	return files[0], files[1], nil
}

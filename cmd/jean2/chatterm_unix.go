//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// ctrlLEndsLine makes Ctrl-L end a line on the terminal f, as Enter does, so that the chat
// sees it the moment it is pressed: the terminal stays in its line mode (the person's
// editing keys, echo and Ctrl-C keep working as the kernel does them) with Ctrl-L added as
// its extra end-of-line character (VEOL). restore puts the terminal back as it was.
func ctrlLEndsLine(f *os.File) (restore func()) {
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		return func() {}
	}
	t := *old
	t.Cc[unix.VEOL] = 0x0c // Ctrl-L
	if unix.IoctlSetTermios(fd, ioctlSetTermios, &t) != nil {
		return func() {}
	}
	return func() { _ = unix.IoctlSetTermios(fd, ioctlSetTermios, old) }
}

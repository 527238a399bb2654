//go:build unix

package rawio

import (
	"syscall"
	"testing"
)

func setBlocking(t *testing.T, rc syscall.RawConn) {
	t.Helper()
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.SetNonblock(int(fd), false) }); err != nil || serr != nil {
		t.Fatal(err, serr)
	}
}

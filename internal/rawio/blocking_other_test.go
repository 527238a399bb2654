//go:build !unix

package rawio

import (
	"syscall"
	"testing"
)

func setBlocking(t *testing.T, _ syscall.RawConn) { t.Skip("no raw I/O here") }

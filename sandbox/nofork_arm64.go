//go:build linux

package sandbox

import "golang.org/x/sys/unix"

const auditArch = unix.AUDIT_ARCH_AARCH64

// arm64 has no fork or vfork system calls; clone does both.
var forkSyscalls []uint32

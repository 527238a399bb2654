//go:build linux && (amd64 || arm64)

package sandbox

import "golang.org/x/sys/unix"

// A file's mode, owner, times and extended attributes are not its contents: Landlock does
// not govern them, so the view (view_linux.go) is what keeps a confined process from
// changing them outside its writable places (EROFS). Two rules remain for seccomp:
//
//   - Always: no set-user-ID or set-group-ID bit, on any file. A worker keeps jean2's uid;
//     as root, `cp /usr/bin/id w/id; chmod 4755 w/id` in its workspace made a root-owned
//     set-user-ID program any local user could run later. chmod, fchmod, fchmodat(2) with
//     either bit in the mode fail with EPERM, and so do open, openat, creat, mknod and
//     mknodat creating a file with one. openat2 passes its mode in memory, which seccomp
//     cannot read: it answers ENOSYS, and the C libraries, Go and the runtimes use openat.
//   - Where no view can be had (no mount namespace: a container that forbids it, or an
//     ordinary user without user namespaces): every change of mode, owner, times or
//     extended attributes fails with EPERM, in the process's writable places too — the
//     fallback is coarser, but jean2's token and the user's keys keep their modes.

// metadataCall is a system call the filter judges: by a mode argument (modeArg ≥ 0, the
// index of the argument holding the mode) or, with modeArg -1, as a change of metadata
// refused whole without a view.
type metadataCall struct {
	nr      uint32
	modeArg int
}

const setIDBits = unix.S_ISUID | unix.S_ISGID

// metadataFilter builds the program. With whole, every call of metadataCalls is refused.
func metadataFilter(whole bool) []unix.SockFilter {
	deny := bpfStmt(ret, seccompRetErrno|uint32(unix.EPERM))
	allow := bpfStmt(ret, seccompRetAllow)
	prog := append(nativeCallsOnly(deny),
		bpfJump(jeq, uint32(unix.SYS_OPENAT2), 0, 1),
		bpfStmt(ret, seccompRetErrno|uint32(unix.ENOSYS)),
	)
	for _, c := range metadataCalls {
		switch {
		case whole:
			prog = append(prog, bpfJump(jeq, c.nr, 0, 1), deny)
		case c.modeArg >= 0:
			prog = append(prog,
				bpfJump(jeq, c.nr, 0, 4),
				bpfStmt(ld, uint32(16+8*c.modeArg)), // the mode's low 32 bits
				bpfJump(jset, setIDBits, 0, 1),
				deny,
				allow,
			)
		}
	}
	for _, nr := range createCalls {
		prog = append(prog,
			bpfJump(jeq, nr.nr, 0, 4),
			bpfStmt(ld, uint32(16+8*nr.modeArg)),
			bpfJump(jset, setIDBits, 0, 1),
			deny,
			allow,
		)
	}
	return append(prog, allow)
}

// denyMetadata installs the filter on the calling thread; the exec that follows passes it
// on. whole refuses every change of metadata (no view).
func denyMetadata(whole bool) error {
	return installFilter(metadataFilter(whole), "against set-ID bits and metadata changes")
}

//go:build unix

package fsutil

import "syscall"

// lockNoFollow: a link planted where a lock file goes is not followed (the lock files live
// in jean2's home, which tools cannot reach; this keeps it so if that ever changes).
const lockNoFollow = syscall.O_NOFOLLOW

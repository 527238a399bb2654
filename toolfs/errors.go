package toolfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// Sentinels an *Error may wrap; test with errors.Is.
var (
	// ErrOutsideScope: the real location is outside the workspace, its allowed paths and the
	// session's temporary folder, and no permission granted earlier covers it.
	ErrOutsideScope = errors.New("outside the workspace, its allowed paths and the session's temporary folder")
	// ErrBlocked: the path is, or leads to, a blocked system path; no permission grants it.
	ErrBlocked = errors.New("a blocked system path (/etc, /usr, /bin, /sbin, /boot, /dev, /proc, /sys, /root); no permission can grant access to it")
	// ErrProtected: the path is, or lies in, a protected place (jean2's home, its tools
	// folder, a credential folder such as ~/.ssh), or is a folder that holds one; whatever the
	// workspace and whatever was granted, ctx.fs does not touch it.
	ErrProtected = errors.New("protected: jean2's home, its tools folder and credential folders are never open to ctx.fs, whatever the workspace or permissions")
	// ErrReadOnly: the path is, or lies in, a place ctx.fs may read but not change (a
	// workspace's .jean2 folder, whose settings jean2 acts on), or is a folder that holds one.
	ErrReadOnly = errors.New("read-only to tools: a workspace's .jean2 folder holds settings jean2 acts on and only the user changes it")
	// ErrWriteBudget: a write would pass what one call may write through ctx.fs.
	ErrWriteBudget = errors.New("write budget spent")
	// ErrTooLarge: a read went past the configured size cap.
	ErrTooLarge = errors.New("file too large")
	// ErrNotRegular: the path is a device, a named pipe or a socket, which ctx.fs does not read or write.
	ErrNotRegular = errors.New("not a regular file or directory")
	// ErrChanged: the path was swapped (e.g. for a symlink) between the policy check and its use.
	ErrChanged = errors.New("the path changed while it was being checked; try again")
)

// Codes beyond the errno names.
const (
	CodeTooLarge = "ERR_FS_FILE_TOO_LARGE" // Node's code for a read past its size limit
	CodeAborted  = "ABORT_ERR"             // the call's signal aborted
	CodeUnknown  = "UNKNOWN"
)

// Error is what every ctx.fs operation fails with.
type Error struct {
	Op       string // readFile, writeFile, appendFile, readDir, exists, stat, mkdir, rm, rename
	Path     string // the path as the tool gave it
	Resolved string // the resolved real path the operation was judged on ("" if none)
	Code     string // Node-style code for err.code: ENOENT, EACCES, EPERM, …
	Denied   bool   // refused by policy (outside the scope or blocked), not by the OS
	Err      error
}

func (e *Error) Error() string {
	if msg, ok := e.nodeMessage(); ok {
		return msg
	}
	where := fmt.Sprintf("%s '%s'", e.Op, e.Path)
	if e.Resolved != "" && e.Resolved != e.Path {
		where += " (" + e.Resolved + ")"
	}
	return fmt.Sprintf("%s: %s: %s", e.Code, where, describe(e.Err))
}

func (e *Error) Unwrap() error { return e.Err }

// nodeSyscalls names, per ctx.fs operation, the system call Node's own fs names in its
// message for the same failure.
var nodeSyscalls = map[string]string{
	"readFile": "open", "writeFile": "open", "appendFile": "open", "readDir": "scandir",
	"stat": "stat", "exists": "lstat", "mkdir": "mkdir", "rm": "lstat", "rename": "rename",
}

// nodeWords are Node's descriptions where they differ from Go's.
var nodeWords = map[syscall.Errno]string{
	syscall.EISDIR: "illegal operation on a directory",
	syscall.EEXIST: "file already exists",
	syscall.ELOOP:  "too many symbolic links encountered",
}

// nodeMessage words a failure the OS reported (not a refusal by policy) as Node does, so a
// tool written against Node's fs reads the same text: "ENOENT: no such file or directory,
// open '/w/missing.txt'". The path is the one the tool gave, followed by where it led when
// that differs.
func (e *Error) nodeMessage() (string, bool) {
	var errno syscall.Errno
	if e.Denied || e.Err == nil || !errors.As(e.Err, &errno) || e.Code == "" || e.Code == CodeUnknown {
		return "", false
	}
	call, ok := nodeSyscalls[e.Op]
	if !ok {
		return "", false
	}
	if e.Op == "rm" && errno != syscall.ENOENT {
		call = "rm"
	}
	words, ok := nodeWords[errno]
	if !ok {
		words = errno.Error()
	}
	msg := fmt.Sprintf("%s: %s, %s '%s'", e.Code, words, call, e.Path)
	var le *os.LinkError
	if errors.As(e.Err, &le) {
		msg += fmt.Sprintf(" -> '%s'", le.New)
	}
	if e.Resolved != "" && e.Resolved != e.Path {
		// Node would resolve a relative path against its working folder; say where it was.
		msg += " (" + e.Resolved + ")"
	}
	return msg, true
}

// describe gives the cause without repeating the path an *fs.PathError would add.
func describe(err error) string {
	if err == nil {
		return "failed"
	}
	var errno syscall.Errno
	var pe *fs.PathError
	var le *os.LinkError
	if errors.As(err, &errno) {
		if errors.As(err, &le) {
			return fmt.Sprintf("%s, to '%s'", errno, le.New)
		}
		if errors.As(err, &pe) {
			return errno.Error()
		}
	}
	return err.Error()
}

// codeOf maps an error to the code Node would give.
func codeOf(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.ENOENT:
			return "ENOENT"
		case syscall.EACCES:
			return "EACCES"
		case syscall.EPERM:
			return "EPERM"
		case syscall.EISDIR:
			return "EISDIR"
		case syscall.ENOTDIR:
			return "ENOTDIR"
		case syscall.EEXIST:
			return "EEXIST"
		case syscall.ENOTEMPTY:
			return "ENOTEMPTY"
		case syscall.ELOOP:
			return "ELOOP"
		case syscall.EXDEV:
			return "EXDEV"
		case syscall.EINVAL:
			return "EINVAL"
		case syscall.ENAMETOOLONG:
			return "ENAMETOOLONG"
		case syscall.EBUSY:
			return "EBUSY"
		case syscall.ENOSPC:
			return "ENOSPC"
		case syscall.EROFS:
			return "EROFS"
		case syscall.EMFILE:
			return "EMFILE"
		case syscall.EIO:
			return "EIO"
		case syscall.EFBIG:
			return "EFBIG"
		case syscall.ENXIO:
			return "ENXIO"
		case syscall.EAGAIN:
			return "EAGAIN"
		case syscall.EDQUOT:
			return "EDQUOT"
		}
	}
	switch {
	case errors.Is(err, ErrTooLarge):
		return CodeTooLarge
	case errors.Is(err, ErrNotRegular):
		return "EINVAL"
	case errors.Is(err, ErrChanged):
		return "ELOOP"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return CodeAborted
	case errors.Is(err, fs.ErrNotExist):
		return "ENOENT"
	case errors.Is(err, fs.ErrExist):
		return "EEXIST"
	case errors.Is(err, fs.ErrPermission):
		return "EACCES"
	}
	return CodeUnknown
}

// errnoErr wraps a bare errno so codeOf and describe treat it as the OS's own error.
func errnoErr(op, path string, errno syscall.Errno) error {
	return &fs.PathError{Op: op, Path: path, Err: errno}
}

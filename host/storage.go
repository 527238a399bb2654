package host

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
)

// StorageError is a file jean2 could not write at start (its home, database, token,
// temporary folders), said as its cause and path first: "disk full at …", "read-only: …".
type StorageError struct {
	Cause string // "disk full", "read-only", "permission denied", "disk quota exceeded"
	Path  string
	What  string // what jean2 was doing: "create the jean2 home"
	Fix   string
	Err   error
}

func (e *StorageError) Error() string {
	switch e.Cause {
	case "read-only":
		return fmt.Sprintf("read-only: %s is on a read-only file system, so jean2 cannot %s; %s (%v)", e.Path, e.What, e.Fix, e.Err)
	default:
		return fmt.Sprintf("%s at %s: jean2 cannot %s; %s (%v)", e.Cause, e.Path, e.What, e.Fix, e.Err)
	}
}

func (e *StorageError) Unwrap() error { return e.Err }

// ExplainStorage names the cause and the path of err when it is a full disk, a read-only
// file system, a refused permission or a quota (from the system, or SQLite's words for
// them), and returns err unchanged otherwise. what says what jean2 was doing at path.
func ExplainStorage(what, path string, err error) error {
	if err == nil {
		return nil
	}
	var se *StorageError
	if errors.As(err, &se) {
		return err
	}
	e := &StorageError{Path: path, What: what, Err: err}
	msg := strings.ToLower(err.Error())
	switch {
	case errors.Is(err, syscall.ENOSPC) || strings.Contains(msg, "database or disk is full"):
		e.Cause, e.Fix = "disk full", "free space on that disk, or set JEAN2_HOME to a folder on another"
	case errors.Is(err, syscall.EDQUOT):
		e.Cause, e.Fix = "disk quota exceeded", "free space within your quota, or set JEAN2_HOME to a folder elsewhere"
	case errors.Is(err, syscall.EROFS) || strings.Contains(msg, "read-only file system") || strings.Contains(msg, "attempt to write a readonly database"):
		e.Cause, e.Fix = "read-only", "set JEAN2_HOME to a folder on a writable disk"
	case errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM):
		e.Cause, e.Fix = "permission denied", "give your user write access to it, or set JEAN2_HOME to a folder you own"
	default:
		return err
	}
	return e
}

package worker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"time"

	"github.com/jean2/jean2/internal/jsonrpc"
	"github.com/jean2/jean2/internal/workerproto"
)

// ErrPoolClosed is returned by Execute and Load after Close.
var ErrPoolClosed = errors.New("worker pool is closed")

// LoadError is a tool module that failed to load in its worker: an exception at import, a
// syntax error, missing exports. File, Line and Column point into the tool's own source when
// the worker could tell (through the bundle's source map).
type LoadError struct {
	Tool    string
	Message string
	File    string
	Line    int
	Column  int
	Stack   string
}

func (e *LoadError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tool %s failed to load", e.Tool)
	if e.File != "" {
		b.WriteString(" at " + e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
			if e.Column > 0 {
				fmt.Fprintf(&b, ":%d", e.Column)
			}
		}
	}
	b.WriteString(": " + e.Message)
	return b.String()
}

// TimeoutError is the error of a call that ran longer than its timeout. Its text is fixed
// ("Tool execution timed out after <N>ms") because models and people have learnt it.
type TimeoutError struct {
	Tool    string
	CallID  string
	Timeout time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("Tool execution timed out after %dms", e.Timeout.Milliseconds())
}

// StoppedError is the error of a call whose context ended (Stop, shutdown); Cause is the
// context's cause.
type StoppedError struct {
	Tool   string
	CallID string
	Cause  error
}

func (e *StoppedError) Error() string {
	return fmt.Sprintf("tool %s: call %s was stopped: %v", e.Tool, e.CallID, e.Cause)
}

func (e *StoppedError) Unwrap() error { return e.Cause }

// KilledError is why a worker was killed on purpose: a call on it did not stop after its
// timeout or after it was stopped. The other calls that were running on it fail with it.
type KilledError struct {
	Tool   string
	PID    int
	CallID string // the call that would not stop
	Reason string // "its timeout" or "it was stopped"
}

func (e *KilledError) Error() string {
	return fmt.Sprintf("tool %s: worker %d was killed because call %s of the same tool did not stop after %s",
		e.Tool, e.PID, e.CallID, e.Reason)
}

// ExitError is a worker that ended on its own while calls ran on it: process.exit() in a
// tool, an uncaught exception, a crash, an out-of-memory kill, or a protocol violation.
type ExitError struct {
	Tool   string
	PID    int
	Code   int    // exit code, -1 when killed by a signal
	Signal string // the signal's name when killed by one
	Stderr []string
	// Noted are stderr lines the pool's NoteStderr picked out, wherever they came (the
	// cause of a crash is often above the last lines, e.g. before a native stack trace).
	Noted  []string
	Reason string // set when the host ended it: why
}

func (e *ExitError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tool %s: worker %d ", e.Tool, e.PID)
	switch {
	case e.Reason != "":
		b.WriteString(e.Reason)
	case e.Signal != "":
		fmt.Fprintf(&b, "was killed by signal %s", e.Signal)
		if e.Signal == "SIGKILL" {
			b.WriteString(" (out of memory, or killed from outside)")
		}
	default:
		fmt.Fprintf(&b, "exited with code %d", e.Code)
	}
	b.WriteString(" while calls were running on it")
	if len(e.Stderr) > 0 {
		b.WriteString("; last stderr lines:\n  " + strings.Join(e.Stderr, "\n  "))
	} else {
		b.WriteString(" (it wrote nothing to stderr)")
	}
	return b.String()
}

// CallError is a call the worker itself answered with an error instead of a result: a
// crash it caught (uncaught exception, unhandled rejection), a malformed request.
type CallError struct {
	Tool   string
	CallID string
	Err    *jsonrpc.Error
}

func (e *CallError) Error() string {
	return fmt.Sprintf("tool %s: call %s failed in the worker: %s", e.Tool, e.CallID, e.Err.Message)
}

func (e *CallError) Unwrap() error { return e.Err }

// An error a CallHandler returns may carry its JSON-RPC code and data by implementing these;
// the worker rethrows it to the tool with that code (data.code becomes err.code in JS).
type (
	coder  interface{ ErrorCode() int }
	dataer interface{ ErrorData() any }
)

// RPCError turns an error of a CallHandler into what the worker receives:
//   - a *jsonrpc.Error as it is;
//   - an error with ErrorCode() (and optionally ErrorData()) with that code and data;
//   - a file system error (*fs.PathError, fs.ErrNotExist…) as CodeFailed with the Node
//     code (ENOENT, EACCES, EEXIST, ENOTDIR, EISDIR, ENOTEMPTY, EPERM) and the path;
//   - a context error as CodeFailed saying the call ended;
//   - anything else as CodeFailed with its text.
func RPCError(err error) *jsonrpc.Error {
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		return rpcErr
	}
	var c coder
	if errors.As(err, &c) {
		var data any
		var d dataer
		if errors.As(err, &d) {
			data = d.ErrorData()
		}
		return jsonrpc.NewError(c.ErrorCode(), err.Error(), data)
	}
	if code := nodeCode(err); code != "" {
		data := workerproto.ErrorData{Code: code}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			data.Path = pe.Path
		}
		return jsonrpc.NewError(workerproto.CodeFailed, err.Error(), data)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return jsonrpc.NewError(workerproto.CodeFailed, "the call ended before the request was answered: "+err.Error(), nil)
	}
	return jsonrpc.NewError(workerproto.CodeFailed, err.Error(), nil)
}

// nodeCode names a file system error the way Node does.
func nodeCode(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.ENOENT:
			return "ENOENT"
		case syscall.EACCES:
			return "EACCES"
		case syscall.EEXIST:
			return "EEXIST"
		case syscall.ENOTDIR:
			return "ENOTDIR"
		case syscall.EISDIR:
			return "EISDIR"
		case syscall.ENOTEMPTY:
			return "ENOTEMPTY"
		case syscall.EPERM:
			return "EPERM"
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "ENOENT"
	case errors.Is(err, fs.ErrExist):
		return "EEXIST"
	case errors.Is(err, fs.ErrPermission):
		return "EACCES"
	}
	return ""
}

// Package xunix is the part of golang.org/x/sys/unix that jean2's descriptor-based file
// code uses (toolfs, undo, the server's token file), under the same names, so that the code
// builds on Windows too.
//
// On Unix every name is x/sys/unix's own (aliases and one-line wrappers): nothing changes
// there. On Windows, which has no openat, the *at calls act on the path of the directory
// handle (GetFinalPathNameByHandle) joined with the name: a folder swapped for a link
// between the check and the call is followed there, which the Unix calls refuse. Only the
// final element is opened without following a link (FILE_FLAG_OPEN_REPARSE_POINT). jean2
// runs tools on Windows only when the person turned the sandbox off (docs/security.md), and
// says so; this keeps ctx.fs's policy (which paths, which protected places) but not its
// guarantees against a concurrent swap.
package xunix

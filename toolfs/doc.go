// Package toolfs owns the file system a tool is handed (tool.FS). Every operation is decided
// and done by the host: the path is resolved as ctx.resolvePath does, blocked system paths
// are refused, symlinks are followed to the real location, which must lie in the workspace,
// an allowed path or the session's temporary folder, or be covered by a permission granted
// earlier. The operation then acts on what was checked, by descriptor: the folder holding the
// target is opened from the scope root's descriptor with openat2 (RESOLVE_BENEATH,
// RESOLVE_NO_SYMLINKS, RESOLVE_NO_MAGICLINKS), and the target is opened, made, removed,
// renamed or examined by its name in that folder (openat, mkdirat, unlinkat, renameat2,
// statx), trees are snapshotted, removed and restored the same way. A folder swapped for a
// symlink between the check and the use is met as ELOOP, never followed; no path-based
// system call follows a check.
//
// Every change (writeFile, appendFile, mkdir, rm, rename) is recorded on the call's ledger,
// successful or not, with a snapshot of what stood there before, so Restore can put the
// paths back exactly: content, mode, whole trees.
//
// Errors are *Error values carrying a Node-style code (ENOENT, EACCES, EISDIR, ENOTDIR,
// EEXIST, ENOTEMPTY, EPERM, …) that the worker sets as err.code.
package toolfs

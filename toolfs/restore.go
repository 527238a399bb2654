package toolfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	unix "github.com/jean2/jean2/internal/xunix"

	"github.com/jean2/jean2/tool"
)

// Report says what Restore put back. Paths are the ledger's paths (real, absolute).
type Report struct {
	Restored  []string `json:"restored"`  // existed before and still did: content, mode and entries put back
	Recreated []string `json:"recreated"` // existed before, had been removed or moved away, made again
	Removed   []string `json:"removed"`   // did not exist before the changes and were removed
}

// RestoreRefusal is Restore's answer when it cannot put everything back exactly; it changes
// nothing on disk then.
type RestoreRefusal struct {
	Problems []RestoreProblem
}

// RestoreProblem is one path Restore cannot put back, and why.
type RestoreProblem struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

func (r *RestoreRefusal) Error() string {
	var b strings.Builder
	b.WriteString("restore refused, nothing was changed: ")
	for i, p := range r.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: %s", p.Path, p.Reason)
	}
	return b.String()
}

// RestoreOptions tune RestoreWith.
type RestoreOptions struct {
	// Verify, when set, is asked about every path before anything is changed; an error
	// refuses the whole restore. It is the seam for noticing edits made outside jean2 after
	// the changes (by an editor, a shell, another program): a later version compares what
	// stands now with what the last recorded change left, and refuses or asks.
	Verify func(path string) error
}

// Restore puts every path named by changes back as it was before the earliest change to it:
// content and mode of files, symlinks, whole directory trees; paths that did not exist are
// removed. See RestoreWith.
func Restore(changes []tool.Change) (Report, error) {
	return RestoreWith(changes, RestoreOptions{})
}

// RestoreWith is Restore with options. Changes that never reached the disk (Disk false:
// refusals, failures the OS reported before changing anything) are skipped. It refuses,
// changing nothing, when the earliest change on disk to a path has no before-state (a
// change a tool recorded itself) or an Incomplete one, or when a ledger path is not
// absolute and clean; the *RestoreRefusal names every such path. A later change's
// before-state is never needed (the earliest one is what the path goes back to), so a
// file created by the turn and then grown past the snapshot limit still restores.
//
// Changes are undone in reverse order. Undoing every change in turn leaves each path as the
// before-state of its earliest change, so only that one is applied per path, in reverse
// order of those earliest changes; and a path below one whose earliest change came before
// its own is left to that ancestor, whose snapshot (a tree, a file or nothing) is the older
// truth for everything beneath it. Errors met while writing are collected and returned joined;
// the report lists what was done.
func RestoreWith(changes []tool.Change, opts RestoreOptions) (Report, error) {
	type undo struct {
		path   string
		before *tool.FileState
	}
	var plan []undo
	seen := map[string]bool{}
	refusal := &RestoreRefusal{}
	for _, c := range changes {
		if !c.Disk {
			continue
		}
		if reason := badPath(c.Path); reason != "" {
			refusal.Problems = append(refusal.Problems, RestoreProblem{Path: c.Path, Reason: reason})
			continue
		}
		if seen[c.Path] {
			// Only the earliest change decides what the path goes back to.
			continue
		}
		seen[c.Path] = true
		if reason := missingUndo(c.Before); reason != "" {
			refusal.Problems = append(refusal.Problems, RestoreProblem{Path: c.Path, Reason: reason})
			continue
		}
		plan = append(plan, undo{c.Path, c.Before})
	}
	plan = dropCovered(plan, func(u undo) string { return u.path })
	if opts.Verify != nil {
		for _, u := range plan {
			if err := opts.Verify(u.path); err != nil {
				refusal.Problems = append(refusal.Problems, RestoreProblem{Path: u.path, Reason: err.Error()})
			}
		}
	}
	if len(refusal.Problems) > 0 {
		return Report{}, refusal
	}

	var report Report
	var errs []error
	for i := len(plan) - 1; i >= 0; i-- {
		u := plan[i]
		did, err := restorePath(u.path, u.before)
		if err != nil {
			errs = append(errs, fmt.Errorf("restore %s: %w", u.path, err))
			continue
		}
		switch did {
		case didRestore:
			report.Restored = append(report.Restored, u.path)
		case didRecreate:
			report.Recreated = append(report.Recreated, u.path)
		case didRemove:
			report.Removed = append(report.Removed, u.path)
		}
	}
	return report, errors.Join(errs...)
}

// dropCovered removes, from a plan in order of earliest change, every path below one that
// changed earlier: that ancestor's before-state (a whole tree, a file, or nothing) already
// decides what lies below it, and its path may not even exist as a directory any more when
// the descendant's turn would come (a folder the turn made, filled and moved away).
func dropCovered[T any](plan []T, pathOf func(T) string) []T {
	earlier := make(map[string]bool, len(plan))
	kept := plan[:0:0]
	for _, u := range plan {
		p := pathOf(u)
		covered := false
		for dir := filepath.Dir(p); ; dir = filepath.Dir(dir) {
			if earlier[dir] {
				covered = true
				break
			}
			if dir == filepath.Dir(dir) {
				break
			}
		}
		earlier[p] = true
		if !covered {
			kept = append(kept, u)
		}
	}
	return kept
}

func badPath(p string) string {
	switch {
	case !filepath.IsAbs(p) || filepath.Clean(p) != p:
		return "the ledger path is not absolute and clean"
	case p == string(filepath.Separator):
		return "the root directory cannot be restored"
	}
	return ""
}

// missingUndo says why a before-state cannot be put back exactly, or "".
func missingUndo(before *tool.FileState) string {
	if before == nil {
		return "no undo data was recorded for this change (it was recorded by the tool, not done through ctx.fs)"
	}
	return stateProblem(before)
}

// stateProblem checks a before-state read back from a ledger: no Incomplete anywhere, and
// entry names that are single path elements, so a tampered ledger cannot lead outside.
func stateProblem(st *tool.FileState) string {
	if st.Incomplete != "" {
		return "the snapshot is incomplete: " + st.Incomplete
	}
	for i := range st.Entries {
		e := &st.Entries[i]
		if e.Name == "" || e.Name == "." || e.Name == ".." || strings.ContainsAny(e.Name, "/\x00") {
			return fmt.Sprintf("the snapshot holds an invalid entry name %q", e.Name)
		}
		if !e.State.Exists {
			return fmt.Sprintf("the snapshot holds an absent entry %q", e.Name)
		}
		if p := stateProblem(&e.State); p != "" {
			return p
		}
	}
	return ""
}

type restoreAction int

const (
	didNothing restoreAction = iota
	didRestore
	didRecreate
	didRemove
)

func restorePath(path string, before *tool.FileState) (restoreAction, error) {
	// The ledger holds real paths; if a parent has become a symlink since, writing through it
	// could land anywhere, so refuse rather than follow it. The parent is opened with no
	// symlink allowed on the way, and everything below is done relative to it, by
	// descriptor, so a folder swapped for a link while restoring is not followed either.
	parent, name := filepath.Dir(path), filepath.Base(path)
	pfd, err := openAt(unix.AT_FDCWD, parent, oDirRef, 0)
	switch {
	case errors.Is(err, unix.ELOOP):
		return didNothing, fmt.Errorf("its parent directory %s now leads elsewhere through a symlink; not following it", parent)
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		if !before.Exists {
			return didNothing, nil
		}
		return didNothing, fmt.Errorf("its parent directory %s no longer exists", parent)
	case err != nil:
		return didNothing, pathErr("open", parent, err)
	}
	defer unix.Close(pfd)
	var current *fileStat
	st, err := statAt(pfd, name)
	switch {
	case err == nil:
		current = &st
	case !errors.Is(err, unix.ENOENT):
		return didNothing, pathErr("lstat", path, err)
	}
	if !before.Exists {
		if current == nil {
			return didNothing, nil
		}
		return didRemove, removeAllAt(pfd, name, path)
	}
	if err := putState(pfd, name, path, before, current); err != nil {
		return didNothing, err
	}
	if current != nil {
		return didRestore, nil
	}
	return didRecreate, nil
}

// permBits are the mode bits chmod sets.
const permBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// putState makes name in dirfd (path is its real path) exactly st. current is what stands
// there now (nil when nothing).
func putState(dirfd int, name, path string, st *tool.FileState, current *fileStat) error {
	switch {
	case st.Mode&fs.ModeSymlink != 0:
		if current != nil {
			if err := removeAllAt(dirfd, name, path); err != nil {
				return err
			}
		}
		if err := unix.Symlinkat(string(st.Content), dirfd, name); err != nil {
			return pathErr("symlink", path, err)
		}
		return nil
	case st.IsDir:
		return putDir(dirfd, name, path, st, current)
	case st.Mode.Type() != 0:
		return fmt.Errorf("the snapshot holds a %s, which cannot be recreated", kindOf(st.Mode))
	}
	if current != nil && !current.isRegular() {
		if err := removeAllAt(dirfd, name, path); err != nil {
			return err
		}
	} else if current != nil && current.mode.Perm()&0o200 == 0 {
		// A read-only file is written in place like any other; its recorded mode is set after.
		if err := chmodAt(dirfd, name, 0o600); err != nil {
			return pathErr("chmod", path, err)
		}
	}
	// O_TRUNC in place keeps the inode, so hard links to the file see the old content again.
	fd, err := openAtName(dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, 0o600)
	if err != nil {
		return pathErr("open", path, err)
	}
	file := os.NewFile(uintptr(fd), path)
	_, werr := file.Write(st.Content)
	merr := file.Chmod(st.Mode & permBits)
	return errors.Join(werr, merr, file.Close())
}

func putDir(dirfd int, name, path string, st *tool.FileState, current *fileStat) error {
	if current != nil && !current.isDir() {
		if err := retryEINTR(func() error { return unix.Unlinkat(dirfd, name, 0) }); err != nil {
			return pathErr("unlink", path, err)
		}
		current = nil
	}
	// Owner rwx while entries are put back; the recorded mode is set last.
	if current == nil {
		if err := retryEINTR(func() error { return unix.Mkdirat(dirfd, name, 0o700) }); err != nil {
			return pathErr("mkdir", path, err)
		}
	} else if err := chmodAt(dirfd, name, 0o700); err != nil {
		return pathErr("chmod", path, err)
	}
	fd, err := openAtName(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return pathErr("open", path, err)
	}
	dir := os.NewFile(uintptr(fd), path)
	defer dir.Close()
	want := make(map[string]bool, len(st.Entries))
	for _, e := range st.Entries {
		want[e.Name] = true
	}
	names, err := readNames(fd, path)
	if err != nil {
		return err
	}
	slices.Sort(names)
	var errs []error
	for _, n := range names {
		if !want[n] {
			errs = append(errs, removeAllAt(fd, n, filepath.Join(path, n)))
		}
	}
	for i := range st.Entries {
		e := &st.Entries[i]
		child := filepath.Join(path, e.Name)
		var cur *fileStat
		cst, err := statAt(fd, e.Name)
		switch {
		case err == nil:
			cur = &cst
		case !errors.Is(err, unix.ENOENT):
			errs = append(errs, pathErr("lstat", child, err))
			continue
		}
		if err := putState(fd, e.Name, child, &e.State, cur); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", child, err))
		}
	}
	errs = append(errs, dir.Chmod(st.Mode&permBits))
	return errors.Join(errs...)
}

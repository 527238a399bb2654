//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Landlock judges reads and writes of files' contents, not what else a process can do to
// the files it sees: chmod, chown, utimes and xattrs pass it, and a worker keeps jean2's uid.
// So the launcher gives every confined process a view of the machine instead, as
// sandbox-runtime and Codex do (with bubblewrap): a mount namespace of its own in which every
// mount is read-only (a write, or a change of mode, owner, times or extended attributes,
// fails with EROFS), the call's writable places are bound read-write over that, and the
// protected places are covered by empty read-only ones. The launcher builds it itself rather
// than through bubblewrap: it already runs first in every confined process and does the
// rest of the confinement in an order the view must fit into (cgroups and the network
// namespace before, Landlock, seccomp and the capability drop after), jean2 stays one
// binary with nothing more to install, and the same spec serves workers, shell commands,
// installs and MCP servers.
//
// The order matters, and is:
//  1. every source is opened refusing symbolic links and cloned as a detached mount tree
//     (open_tree), before anything is covered, so a place inside a protected one can still
//     be shown;
//  2. every mount of the namespace is made read-only and nosuid (mount_setattr, recursive);
//  3. hidden places and shown ones are attached by depth, parents first: a workspace, then a
//     .env hidden in it; $JEAN2_HOME hidden, then the session's folder shown in it (its
//     mount point made in the empty cover, which is still writable then);
//  4. the covers are made read-only, /dev/shm is a private tmpfs, /proc is the launcher's
//     own pid namespace's (when it is that namespace's init), and the working folder is
//     entered again so that it is the view's and not the machine's.
//
// The process cannot undo it: it has no capability left, Landlock refuses every mount
// operation and the seccomp filter of nons_linux.go refuses it a namespace of its own.

// buildView moves the calling thread (the launcher's, locked) into a new mount namespace
// and makes it the view v describes.
func buildView(v *View) error {
	wd, _ := os.Getwd()
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("build the view: unshare(CLONE_NEWNS): %w", err)
	}
	// Slaves: the host's later mounts (a session's temporary tmpfs) still reach the view,
	// and nothing mounted here goes back.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("build the view: make / a slave mount: %w", err)
	}
	ops, err := viewOps(v)
	defer func() {
		for _, op := range ops {
			op.close()
		}
	}()
	if err != nil {
		return err
	}
	ro := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &ro); err != nil {
		return fmt.Errorf("build the view: make every mount read-only: %w", err)
	}
	covers, err := newCovers()
	if err != nil {
		return err
	}
	defer covers.close()
	for _, op := range ops {
		if err := op.attach(covers); err != nil {
			return err
		}
	}
	if err := covers.seal(); err != nil {
		return err
	}
	if err := privateShm(v.ShmMB); err != nil {
		return err
	}
	if os.Getpid() == 1 {
		if err := ownProc(); err != nil {
			return err
		}
	}
	if wd != "" {
		if err := unix.Chdir(wd); err != nil {
			return fmt.Errorf("build the view: enter the working folder %s again: %w", wd, err)
		}
	}
	return nil
}

// viewOp is one place of a view: shown (tree is its detached copy) or hidden (tree -1).
type viewOp struct {
	target string
	tree   int
	what   string // for errors: "writable place", "read-only place", "bind", "hidden place"
}

func (op viewOp) close() {
	if op.tree >= 0 {
		unix.Close(op.tree)
	}
}

func (op viewOp) hidden() bool { return op.tree < 0 }

// viewOps opens and copies every place v shows (before anything is covered) and orders
// every operation parents first, a cover before what is shown again inside it.
func viewOps(v *View) ([]viewOp, error) {
	var ops []viewOp
	show := func(source, target string, write, optional bool, what string) error {
		tree, err := cloneTree(source, write)
		if err != nil {
			if optional && errors.Is(err, unix.ENOENT) {
				return nil
			}
			return fmt.Errorf("build the view: %s %s: %w", what, source, err)
		}
		ops = append(ops, viewOp{target: target, tree: tree, what: what})
		return nil
	}
	for _, p := range v.Writable {
		if err := show(p, p, true, false, "writable place"); err != nil {
			return ops, err
		}
	}
	for _, b := range v.Binds {
		if err := show(b.Source, b.Target, b.Write, false, "bind of"); err != nil {
			return ops, err
		}
	}
	for _, p := range v.ReadOnly {
		if err := show(p, p, false, true, "read-only place"); err != nil {
			return ops, err
		}
	}
	for _, p := range v.Hidden {
		ops = append(ops, viewOp{target: p, tree: -1, what: "hidden place"})
	}
	slices.SortStableFunc(ops, func(a, b viewOp) int {
		if d := strings.Count(a.target, "/") - strings.Count(b.target, "/"); d != 0 {
			return d
		}
		if a.target == b.target && a.hidden() != b.hidden() {
			if a.hidden() {
				return -1
			}
			return 1
		}
		return 0
	})
	return ops, nil
}

// cloneTree opens path refusing every symbolic link on the way and returns a detached copy
// of the mounts there (recursive), nosuid and nodev, read-only unless write. A writable
// copy keeps the flags the machine gave it: a place mounted read-only stays read-only.
func cloneTree(path string, write bool) (int, error) {
	fd, err := openNoLinks(path, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(fd)
	tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
	if err != nil {
		return -1, fmt.Errorf("open_tree: %w", err)
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	if !write {
		attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
	}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		unix.Close(tree)
		return -1, fmt.Errorf("mount_setattr: %w", err)
	}
	return tree, nil
}

// openNoLinks opens path (O_PATH plus flags) refusing a symbolic link anywhere on the way.
func openNoLinks(path string, flags uint64) (int, error) {
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC | flags, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	for {
		fd, err := unix.Openat2(unix.AT_FDCWD, path, &how)
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
			continue
		}
		if errors.Is(err, unix.ELOOP) {
			return -1, fmt.Errorf("a symbolic link on the way: %w", err)
		}
		return fd, err
	}
}

// attach puts the operation in place: a cover over a hidden place, or the copy of a shown
// one at its target (its mount point made first when the target lies in a cover).
func (op viewOp) attach(c *covers) error {
	if op.hidden() {
		return c.cover(op.target)
	}
	isDir := true
	var st unix.Stat_t
	if err := unix.Fstat(op.tree, &st); err == nil {
		isDir = st.Mode&unix.S_IFMT == unix.S_IFDIR
	}
	fd, err := openNoLinks(op.target, 0)
	if errors.Is(err, unix.ENOENT) {
		fd, err = makeMountPoint(op.target, isDir)
	}
	if err != nil {
		return fmt.Errorf("build the view: show %s %s: %w", op.what, op.target, err)
	}
	defer unix.Close(fd)
	if err := unix.MoveMount(op.tree, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("build the view: show %s %s: move_mount: %w", op.what, op.target, err)
	}
	return nil
}

// makeMountPoint makes the missing part of target (folders, then a folder or an empty file
// for the last name) where it can be made: inside a cover, which is writable until sealed.
// Anywhere else the read-only view refuses it, and the place cannot be shown.
func makeMountPoint(target string, isDir bool) (int, error) {
	parent := filepath.Dir(target)
	pfd, err := openNoLinks(parent, unix.O_DIRECTORY)
	if errors.Is(err, unix.ENOENT) && parent != "/" {
		if pfd, err = makeMountPoint(parent, true); err != nil {
			return -1, err
		}
	} else if err != nil {
		return -1, err
	}
	defer unix.Close(pfd)
	// An O_PATH descriptor cannot be written through: open the parent for real.
	dfd, err := unix.Openat(pfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(dfd)
	name := filepath.Base(target)
	if isDir {
		err = unix.Mkdirat(dfd, name, 0o755)
	} else {
		var f int
		f, err = unix.Openat(dfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o444)
		if err == nil {
			unix.Close(f)
		}
	}
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, fmt.Errorf("make its mount point: %w", err)
	}
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH}
	return unix.Openat2(dfd, name, &how)
}

// covers is a small tmpfs, never attached itself, whose folders and empty file cover the
// hidden places: each cover is a copy of one of its folders (or of its file), so what is
// shown inside one cover is made in that cover only.
type covers struct {
	root   int   // the tmpfs, detached
	n      int   // folders made
	folder []int // the attached covers that are folders, to be made read-only
}

func newCovers() (*covers, error) {
	fs, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("build the view: fsopen(tmpfs): %w", err)
	}
	defer unix.Close(fs)
	for k, v := range map[string]string{"size": "1m", "mode": "0755"} {
		if err := unix.FsconfigSetString(fs, k, v); err != nil {
			return nil, fmt.Errorf("build the view: tmpfs %s=%s: %w", k, v, err)
		}
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return nil, fmt.Errorf("build the view: make the covers' tmpfs: %w", err)
	}
	root, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return nil, fmt.Errorf("build the view: fsmount the covers: %w", err)
	}
	f, err := unix.Openat(root, "empty", unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o444)
	if err != nil {
		unix.Close(root)
		return nil, fmt.Errorf("build the view: make the empty file: %w", err)
	}
	unix.Close(f)
	return &covers{root: root}, nil
}

func (c *covers) close() {
	unix.Close(c.root)
	for _, fd := range c.folder {
		unix.Close(fd)
	}
}

// cover hides target behind an empty folder, or an empty file when target is not a folder.
// A target that does not exist (or lies in a cover already) needs nothing.
func (c *covers) cover(target string) error {
	fd, err := openNoLinks(target, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("build the view: hide %s: %w", target, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("build the view: hide %s: %w", target, err)
	}
	name, folder := "empty", st.Mode&unix.S_IFMT == unix.S_IFDIR
	if folder {
		c.n++
		name = strconv.Itoa(c.n)
		if err := unix.Mkdirat(c.root, name, 0o755); err != nil {
			return fmt.Errorf("build the view: hide %s: %w", target, err)
		}
	}
	tree, err := unix.OpenTree(c.root, name, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fmt.Errorf("build the view: hide %s: open_tree: %w", target, err)
	}
	if !folder {
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
		if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, &attr); err != nil {
			unix.Close(tree)
			return fmt.Errorf("build the view: hide %s: %w", target, err)
		}
	}
	if err := unix.MoveMount(tree, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		unix.Close(tree)
		return fmt.Errorf("build the view: hide %s: move_mount: %w", target, err)
	}
	if folder {
		c.folder = append(c.folder, tree)
	} else {
		unix.Close(tree)
	}
	return nil
}

// seal makes every folder cover read-only, once what is shown inside them is in place.
func (c *covers) seal() error {
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	for _, fd := range c.folder {
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &attr); err != nil {
			return fmt.Errorf("build the view: make a cover read-only: %w", err)
		}
	}
	return nil
}

// ownProc mounts, over the machine's /proc, the one of the launcher's own pid namespace:
// the confined processes see themselves and nothing of the host (jean2's environment in
// /proc/<pid>/environ, its command line, its descriptors).
func ownProc() error {
	target, err := openNoLinks("/proc", unix.O_DIRECTORY)
	if err != nil {
		return fmt.Errorf("build the view: /proc: %w", err)
	}
	defer unix.Close(target)
	fs, err := unix.Fsopen("proc", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("build the view: /proc: fsopen: %w", err)
	}
	defer unix.Close(fs)
	if err := unix.FsconfigCreate(fs); err != nil {
		return fmt.Errorf("build the view: /proc of the pid namespace: %w", err)
	}
	m, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return fmt.Errorf("build the view: /proc: fsmount: %w", err)
	}
	defer unix.Close(m)
	if err := unix.MoveMount(m, "", target, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("build the view: /proc: move_mount: %w", err)
	}
	return nil
}

// privateShm gives the view a /dev/shm of its own (shared memory by name is otherwise a
// channel to every process of the machine), sizeMB large.
func privateShm(sizeMB int) error {
	if sizeMB <= 0 {
		sizeMB = 64
	}
	target, err := openNoLinks("/dev/shm", unix.O_DIRECTORY)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("build the view: /dev/shm: %w", err)
	}
	defer unix.Close(target)
	fs, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("build the view: /dev/shm: fsopen: %w", err)
	}
	defer unix.Close(fs)
	for k, v := range map[string]string{"size": strconv.Itoa(sizeMB) + "m", "mode": "1777"} {
		if err := unix.FsconfigSetString(fs, k, v); err != nil {
			return fmt.Errorf("build the view: /dev/shm %s=%s: %w", k, v, err)
		}
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return fmt.Errorf("build the view: /dev/shm: %w", err)
	}
	m, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return fmt.Errorf("build the view: /dev/shm: fsmount: %w", err)
	}
	defer unix.Close(m)
	if err := unix.MoveMount(m, "", target, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("build the view: /dev/shm: move_mount: %w", err)
	}
	return nil
}

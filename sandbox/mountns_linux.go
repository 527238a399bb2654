//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// A workspace's .jean2 folder names commands jean2 starts outside any sandbox (mcp.json), so
// a worker must not change it. Landlock cannot say "all of this folder but that entry" (its
// grants add up and reach everything below), so the launcher seals such folders another
// way: it moves itself into a mount namespace of its own and mounts each folder, read-only,
// over itself. In that namespace the folder is a mount point: writing in it fails with
// EROFS, linking into or out of it with EXDEV, and removing it, renaming it or renaming
// something over it with EBUSY; the worker cannot unmount it (Landlock refuses every mount
// operation to a restricted process, the worker has no capability, and the seccomp filter
// of nons_linux.go refuses it a user namespace of its own). Every other entry of the
// workspace stays the worker's, new ones included. The host's view is untouched: ctx.fs and
// jean2 itself work in the host's namespace.

// sealDirs moves the calling thread (the launcher's, locked, which executes the worker
// next) into a new mount namespace that follows the host's mounts but sends none back, and
// mounts each folder read-only over itself. A folder must be a real folder: the path is
// resolved refusing every symbolic link, so a swapped link cannot turn the mount elsewhere.
func sealDirs(dirs []string) error {
	// On a thread of a multithreaded process the kernel gives the thread its own filesystem
	// context (CLONE_FS) with the namespace; execve keeps both.
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("seal the .jean2 folders: unshare(CLONE_NEWNS): %w", err)
	}
	// The copied mounts may be shared with the host's: made slaves, they still receive the
	// host's mounts and unmounts but what is mounted here stays here.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("seal the .jean2 folders: make / a slave mount: %w", err)
	}
	for _, dir := range dirs {
		if err := sealDir(dir); err != nil {
			return fmt.Errorf("seal %s: %w", dir, err)
		}
	}
	return nil
}

// sealDir mounts dir read-only over itself, in one step: a detached copy of the mount that
// holds dir, made read-only before it is attached (open_tree, mount_setattr, move_mount;
// Linux 5.12, older than any Landlock), so the folder is never writable in between.
func sealDir(dir string) error {
	fd, err := openDirNoLinks(dir)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	defer unix.Close(tree)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		return fmt.Errorf("mount_setattr read-only: %w", err)
	}
	if err := unix.MoveMount(tree, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}

// openDirNoLinks opens dir (O_PATH) refusing a symbolic link anywhere in the path
// (openat2 RESOLVE_NO_SYMLINKS; where openat2 is missing, at least not the last component).
func openDirNoLinks(dir string) (int, error) {
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	for {
		fd, err := unix.Openat2(unix.AT_FDCWD, dir, &how)
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.EAGAIN):
			continue
		case errors.Is(err, unix.ENOSYS):
			fd, err = unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return -1, fmt.Errorf("not a folder, or a symbolic link on the way: %w", err)
		}
		return fd, err
	}
}

// PrepareSealDir makes sure root's .jean2 is a real folder the launcher can seal: it makes
// it (empty) when it is missing, relative to root opened as a folder, and refuses a .jean2
// that is a symbolic link or not a folder (the caller then falls back to Landlock rules
// alone, Plan.Sealed). It returns the folder's path.
func PrepareSealDir(root string) (string, error) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("open %s: %w", root, err)
	}
	defer unix.Close(fd)
	const name = ".jean2"
	if err := unix.Mkdirat(fd, name, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return "", fmt.Errorf("make %s: %w", filepath.Join(root, name), err)
	}
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return "", fmt.Errorf("stat %s: %w", filepath.Join(root, name), err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return "", fmt.Errorf("%s is not a folder", filepath.Join(root, name))
	}
	return filepath.Join(root, name), nil
}

// probeSealArg makes the launcher build a view (view_linux.go) that shows one folder
// read-only, check that it cannot write there and exit: how MountSealAvailable learns
// whether the launcher can build views, and so seal folders, at all.
const probeSealArg = "--probe-seal"

func probeSeal(dir string) error {
	if err := buildView(&View{ReadOnly: []string{dir}}); err != nil {
		return err
	}
	err := unix.Mkdir(filepath.Join(dir, "x"), 0o700)
	if err == nil {
		return errors.New("the sealed folder is still writable")
	}
	if !errors.Is(err, unix.EROFS) {
		return fmt.Errorf("writing in the sealed folder failed with %v, not EROFS", err)
	}
	return nil
}

// MountSealAvailable reports whether the launcher can build a view, and so seal folders,
// with a mount namespace (it needs CAP_SYS_ADMIN: a root host, or with userNS a user
// namespace of its own, and not a container that forbids mounts), and if not why. It runs
// the launcher once on a scratch folder.
func MountSealAvailable(launcher string, userNS bool) error {
	if launcher == "" {
		return errors.New("no launcher is configured")
	}
	dir, err := os.MkdirTemp("", "jean2-seal-probe-")
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	defer os.RemoveAll(dir)
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	cmd := exec.Command(launcher, ExecArg, probeSealArg, real)
	if userNS {
		InUserNamespace(cmd)
		InPidNamespace(cmd)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "jean2 sandbox: "))
		if msg == "" {
			msg = err.Error()
		}
		return errors.New(msg)
	}
	return nil
}

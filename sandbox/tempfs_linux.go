//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// MountTempFS makes the folder rel beneath root (Layout.Temp) a tmpfs of mb MiB — size=,
// nr_inodes= one per 4 KiB (an empty file counts as much in the measured quota), mode
// 0700, nosuid, nodev —, in the host's own mount namespace, so that a write past it fails
// with ENOSPC whoever writes and however fast. The folder is reached from root without
// following any link (openat2 RESOLVE_NO_SYMLINKS|RESOLVE_BENEATH) and the new mount is
// moved onto that very descriptor (fsopen, fsconfig, fsmount, move_mount), so a link put
// in the folder's place cannot send the mount elsewhere; workers may write only inside the
// folder anyway, never the folder that holds it. The mount's source is source (the host's
// HostName), which the host sweeps once that host is gone. A tmpfs already there
// (another host on the same home) is reused: reused is then true.
func MountTempFS(root, rel, source string, mb int) (reused bool, err error) {
	rootFd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, fmt.Errorf("open %s: %w", root, err)
	}
	defer unix.Close(rootFd)
	target, err := unix.Openat2(rootFd, rel, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return false, fmt.Errorf("open %s beneath %s without links: %w", rel, root, err)
	}
	defer unix.Close(target)
	if ok, err := TempFSRoot(target); err != nil {
		return false, fmt.Errorf("%s: %w", filepath.Join(root, rel), err)
	} else if ok {
		return true, nil
	}
	fs, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return false, fmt.Errorf("fsopen tmpfs: %w", err)
	}
	defer unix.Close(fs)
	for _, kv := range [][2]string{
		{"source", source},
		{"size", strconv.Itoa(mb) + "m"},
		{"nr_inodes", strconv.Itoa(max(mb, 1) * 256)},
		{"mode", "0700"},
		{"uid", strconv.Itoa(unix.Getuid())},
		{"gid", strconv.Itoa(unix.Getgid())},
	} {
		if err := unix.FsconfigSetString(fs, kv[0], kv[1]); err != nil {
			return false, fmt.Errorf("tmpfs %s=%s: %w", kv[0], kv[1], err)
		}
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return false, fmt.Errorf("make a tmpfs: %w", err)
	}
	mnt, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return false, fmt.Errorf("fsmount tmpfs: %w", err)
	}
	defer unix.Close(mnt)
	if err := unix.MoveMount(mnt, "", target, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return false, fmt.Errorf("mount a tmpfs on %s: %w", filepath.Join(root, rel), err)
	}
	return false, nil
}

// TempFSRoot reports whether fd is the root of a tmpfs mount. The root of another
// file system's mount is refused rather than hidden under a tmpfs.
func TempFSRoot(fd int) (bool, error) {
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_TYPE, &stx); err != nil {
		return false, fmt.Errorf("statx: %w", err)
	}
	if stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT == 0 {
		return false, errors.New("the kernel does not say whether a folder is a mount's root")
	}
	if stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT == 0 {
		return false, nil
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return false, fmt.Errorf("statfs: %w", err)
	}
	if st.Type != unix.TMPFS_MAGIC {
		return false, fmt.Errorf("a file system of type %#x is mounted there already", st.Type)
	}
	return true, nil
}

// UnmountTempFS detaches the tmpfs on dir, never through a link in dir's place. What a
// process still holds open stays its until closed; the folder is empty again.
func UnmountTempFS(dir string) error {
	if err := unix.Unmount(dir, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount the tmpfs on %s: %w", dir, err)
	}
	return nil
}

// ProbeTempFS reports whether this process may make the temporary folders size-limited
// tmpfs mounts (MountTempFS): it makes a tmpfs and lets it go unmounted. jean2 doctor asks.
func ProbeTempFS() error {
	fs, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("fsopen tmpfs: %w", err)
	}
	defer unix.Close(fs)
	if err := unix.FsconfigSetString(fs, "size", "1m"); err != nil {
		return fmt.Errorf("tmpfs size: %w", err)
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return fmt.Errorf("make a tmpfs: %w", err)
	}
	mnt, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return fmt.Errorf("fsmount tmpfs: %w", err)
	}
	return unix.Close(mnt)
}

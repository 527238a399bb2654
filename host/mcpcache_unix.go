//go:build unix

package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// mcpCacheDir makes a server's cache folder, base/key, and its tmp folder, and returns the
// first. base lies in $JEAN2_HOME, which no confined process reaches; the key folder is the
// server's to write, so what is in it is not trusted: every step is taken from a
// descriptor, refusing a symbolic link (a tmp the server replaced by a link, or by a file,
// is removed and made again). The launcher refuses a writable place behind a link too.
func mcpCacheDir(base, key string) (string, error) {
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", fmt.Errorf("make %s: %w", base, err)
	}
	baseFd, err := unix.Open(base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("open %s: %w", base, err)
	}
	defer unix.Close(baseFd)
	keyFd, err := mkdirNoFollow(baseFd, key, false)
	if err != nil {
		return "", fmt.Errorf("make %s: %w", filepath.Join(base, key), err)
	}
	defer unix.Close(keyFd)
	tmpFd, err := mkdirNoFollow(keyFd, "tmp", true)
	if err != nil {
		return "", fmt.Errorf("make %s: %w", filepath.Join(base, key, "tmp"), err)
	}
	unix.Close(tmpFd)
	return filepath.Join(base, key), nil
}

// mkdirNoFollow makes dir/name (0700) unless it is a folder already, and opens it without
// following a link. replace removes a link or file found there first.
func mkdirNoFollow(dirFd int, name string, replace bool) (int, error) {
	if err := unix.Mkdirat(dirFd, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, err
	}
	fd, err := unix.Openat(dirFd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == nil || !replace || !(errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR)) {
		return fd, err
	}
	if err := unix.Unlinkat(dirFd, name, 0); err != nil {
		return -1, err
	}
	if err := unix.Mkdirat(dirFd, name, 0o700); err != nil {
		return -1, err
	}
	return unix.Openat(dirFd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

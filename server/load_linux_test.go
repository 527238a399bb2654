//go:build linux

package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jean2/jean2/host"
	"golang.org/x/sys/unix"
)

// mountTmpfs mounts a small tmpfs at a new folder for the test (skipped where mounting is
// not allowed) and unmounts it when the test ends.
func mountTmpfs(t *testing.T, opts string) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// Startup errors say the cause and the path: a full disk and a read-only one, real ones.
func TestStartupStorageErrorsNameCauseAndPath(t *testing.T) {
	open := func(home string) error {
		f := newFixture(t)
		layout, err := host.LayoutFromEnv(func(k string) string {
			if k == "JEAN2_HOME" {
				return home
			}
			return ""
		})
		if err != nil {
			t.Fatal(err)
		}
		f.cfg.Host.Layout = layout
		srv, err := Open(context.Background(), f.cfg)
		if err == nil {
			_ = srv.Close(context.Background())
		}
		return err
	}
	t.Run("disk full", func(t *testing.T) {
		dir := mountTmpfs(t, "size=256k")
		// Fill it.
		fill, err := os.Create(filepath.Join(dir, "filler"))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fill.Write(make([]byte, 1<<20))
		fill.Close()
		home := filepath.Join(dir, "home")
		err = open(home)
		if err == nil || !strings.Contains(err.Error(), "disk full at "+home) {
			t.Fatalf("Open on a full disk: %v, want \"disk full at %s…\"", err, home)
		}
		t.Logf("%v", err)
	})
	t.Run("read-only", func(t *testing.T) {
		dir := mountTmpfs(t, "size=256k")
		if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			t.Skipf("cannot remount read-only: %v", err)
		}
		home := filepath.Join(dir, "home")
		err := open(home)
		if err == nil || !strings.Contains(err.Error(), "read-only: "+home) {
			t.Fatalf("Open on a read-only disk: %v, want \"read-only: %s…\"", err, home)
		}
		t.Logf("%v", err)
	})
}

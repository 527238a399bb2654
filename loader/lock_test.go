package loader

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A bundle in the cache is never replaced: a confined worker's Landlock rule names its
// inode, and a second process that renamed its own copy over it made the worker's import of
// its own code fail with EACCES.
func TestPublishBundleNeverReplaces(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.mjs")
	if err := publishBundle(p, []byte("first")); err != nil {
		t.Fatal(err)
	}
	st1, _ := os.Stat(p)
	if err := publishBundle(p, []byte("second")); err != nil {
		t.Fatal(err)
	}
	st2, _ := os.Stat(p)
	if st1.Sys().(*syscall.Stat_t).Ino != st2.Sys().(*syscall.Stat_t).Ino {
		t.Fatal("the bundle's inode changed: a worker confined to the first one would be refused")
	}
	if data, _ := os.ReadFile(p); string(data) != "first" {
		t.Fatalf("content %q", data)
	}
	if entries, _ := os.ReadDir(filepath.Dir(p)); len(entries) != 1 {
		t.Fatalf("temporary files left: %v", entries)
	}
}

// lockHolderEnv makes the test binary a process that holds a folder's lock until its stdin
// closes (TestLoadWaitsForAnotherProcess).
const lockHolderEnv = "JEAN2_LOADER_TEST_HOLD_LOCK"

func init() {
	spec := os.Getenv(lockHolderEnv)
	if spec == "" {
		return
	}
	cache, dir, _ := cut(spec)
	l := New(Options{CacheDir: cache})
	unlock, err := l.lockFolderFile(context.Background(), dir)
	if err != nil {
		os.Stderr.WriteString(err.Error())
		os.Exit(3)
	}
	os.Stdout.WriteString("locked\n")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	unlock()
	os.Exit(0)
}

func cut(s string) (string, string, bool) {
	for i := range s {
		if s[i] == '\n' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// While another process holds a folder's lock (it is bundling it), Load waits, then finds
// the bundle that process made instead of bundling again.
func TestLoadWaitsForAnotherProcess(t *testing.T) {
	l := newTestLoader(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"tool.ts": "export const definition = {}; export async function execute() {}\n"})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), lockHolderEnv+"="+l.opts.CacheDir+"\n"+dir)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "locked\n" {
		t.Fatalf("lock holder: %q %v", line, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := l.Load(context.Background(), Inspect(dir), LoadOptions{})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Load did not wait for the other process's lock (err %v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	stdin.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := l.builds.Load(); n != 1 {
		t.Fatalf("%d builds", n)
	}
	// A Load that cannot get the lock gives up when its context ends, saying why.
	cmd2 := exec.Command(os.Args[0], "-test.run=^$")
	cmd2.Env = cmd.Env
	stdin2, _ := cmd2.StdinPipe()
	stdout2, _ := cmd2.StdoutPipe()
	if err := cmd2.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd2.Wait()
	defer stdin2.Close()
	if line, _ := bufio.NewReader(stdout2).ReadString('\n'); line != "locked\n" {
		t.Fatalf("second holder: %q", line)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := l.Load(ctx, Inspect(dir), LoadOptions{}); err == nil {
		t.Fatal("Load ran while another process held the folder's lock")
	}
}

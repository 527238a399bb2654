package pgtest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// A test binary killed before it could stop its cluster does not leave postgres running:
// the kernel ends it with the binary (Pdeathsig).
func TestClusterDiesWithTheTestBinary(t *testing.T) {
	if os.Getenv("PGTEST_CHILD") == "orphan" {
		c, err := Start(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("CLUSTER %d %s\n", c.cmd.Process.Pid, c.Dir())
		time.Sleep(time.Minute)
		return
	}
	if _, err := findBin(); err != nil {
		unavailable(t, err.Error())
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestClusterDiesWithTheTestBinary$", "-test.v")
	cmd.Env = append(os.Environ(), "PGTEST_CHILD=orphan")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	var dir string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if n, _ := fmt.Sscanf(sc.Text(), "CLUSTER %d %s", &pid, &dir); n == 2 {
			break
		}
	}
	if pid == 0 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the child test binary did not start a cluster")
	}
	defer os.RemoveAll(dir)
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("postgres %d is not running: %v", pid, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("postgres %d outlived the test binary that started it", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

package sandbox

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func needPidNS(t *testing.T) {
	t.Helper()
	if err := PidNSAvailable(); err != nil {
		t.Skipf("no pid namespace here: %v", err)
	}
}

// initCommand is the launcher of program in a pid namespace of its own, as hosts start it.
func initCommand(t *testing.T, spec Spec, program string, args ...string) *exec.Cmd {
	t.Helper()
	path, argv, err := Command(os.Args[0], spec, program, args)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, argv...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C"}
	if !(Status{PidNS: true}).StartConfined(cmd, spec) {
		t.Fatal("StartConfined refused the spec")
	}
	return cmd
}

// The host sees the launcher end as the program did: its exit code, or SIGKILL; another
// signal reads as 128+N (an init cannot die of it), as a shell reports it.
func TestLauncherInitEndsAsTheProgram(t *testing.T) {
	needPidNS(t)
	for _, c := range []struct {
		script string
		code   int
		signal syscall.Signal
	}{
		{"exit 3", 3, 0},
		{"echo $$ >&2; kill -KILL $$", -1, syscall.SIGKILL},
		{"kill -TERM $$", 128 + 15, 0},
		{"kill -SEGV $$", 128 + 11, 0},
	} {
		cmd := initCommand(t, Spec{}, "/bin/sh", "-c", c.script)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		_ = cmd.Run()
		ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if c.signal != 0 {
			if !ws.Signaled() || ws.Signal() != c.signal {
				t.Errorf("%s: the launcher ended %v, not by %v (%s)", c.script, cmd.ProcessState, c.signal, errb.String())
			}
		} else if ws.Signaled() || ws.ExitStatus() != c.code {
			t.Errorf("%s: the launcher ended %v, not with %d (%s)", c.script, cmd.ProcessState, c.code, errb.String())
		}
		if c.script == "exit 3" && strings.TrimSpace(errb.String()) != "" {
			t.Errorf("stderr: %q", errb.String())
		}
	}
	// The program is the init's child.
	cmd := initCommand(t, Spec{}, "/bin/sh", "-c", "echo $PPID")
	out, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(out)) != "1" {
		t.Fatalf("the program's parent: %q %v", out, err)
	}
}

// The program receives the standard streams and the protocol's pipes at their numbers, and
// the host reads the end of a pipe once the program has exited, though a process it left
// behind held it: that process died with the init.
func TestLauncherInitPassesDescriptors(t *testing.T) {
	needPidNS(t)
	inR, inW, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	defer inR.Close()
	defer outR.Close()
	cmd := initCommand(t, Spec{ExtraFDs: 2}, "/bin/sh", "-c", "cat <&3 >&4; (setsid sleep 30 >&4 &); echo done")
	cmd.ExtraFiles = []*os.File{inR, outW}
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	inW.WriteString("through the pipes")
	inW.Close()
	outW.Close()
	got := make(chan string, 1)
	go func() { b, _ := io.ReadAll(outR); got <- string(b) }()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s != "through the pipes" || strings.TrimSpace(out.String()) != "done" {
			t.Fatalf("read %q, stdout %q", s, out.String())
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the protocol pipe stayed open after the program exited: what it left behind still runs")
	}
}

// Nothing in the namespace can stop, kill or trace the init: a signal it sends to pid 1
// reaches the program at most (which here ignores them), and the init's /proc entries are
// closed to it (non-dumpable).
func TestLauncherInitCannotBeSignalledOrTraced(t *testing.T) {
	needPidNS(t)
	script := `trap '' HUP INT QUIT TERM USR1 USR2 ALRM WINCH TSTP TTIN TTOU ABRT VTALRM IO PWR XCPU
while read -r k v; do [ "$k" = PPid: ] && init=$v; done </proc/self/status # the host's pid of the init
[ -r /proc/$init/status ] || echo "no init at $init"
for s in $(seq 1 31); do kill -s $s 1 2>/dev/null; done
sleep 0.5
cat /proc/$init/environ >/dev/null 2>&1 && echo "read the init's environ"
(exec 9</proc/$init/mem) 2>/dev/null && echo "opened the init's memory"
readlink /proc/$init/exe >/dev/null 2>&1 && echo "read the init's exe link"
readlink /proc/$init/fd/2 >/dev/null 2>&1 && echo "read the init's descriptors"
echo survived`
	cmd := initCommand(t, Spec{}, "/bin/bash", "-c", script)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(out)) != "survived" {
		t.Fatalf("the program got %q (%v, %s)", out, err, errb.String())
	}
}

// A runtime sizes its memory reservations by the RLIMIT_DATA it starts under: Bun, started
// by the init and given its limit a moment later (prlimit), aborted in about one start of
// six ("panic(main thread): abort() called"). The program now has its limit from its first
// instruction.
func TestLauncherInitBunUnderDataLimit(t *testing.T) {
	bun := os.Getenv("JEAN2_BUN")
	if bun == "" {
		t.Skip("JEAN2_BUN is not set")
	}
	real, err := filepath.EvalSymlinks(bun)
	if err != nil {
		t.Skipf("no bun: %v", err)
	}
	for i := 0; i < 12; i++ {
		out, stderr, code := launch(t, Spec{DataMB: 512}, real, "-e", "console.log('ok')")
		if code != 0 || out != "ok\n" {
			t.Fatalf("start %d: exit %d %q %.400s", i, code, out, stderr)
		}
	}
}

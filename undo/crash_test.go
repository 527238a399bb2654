package undo

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/toolfs"
)

// The child side of TestRestoreKilledMidwayResumes: it runs the restore in a process of
// its own and says "applied" once the files are back, before the ledgers are marked, then
// waits to be killed there.
func TestRestoreChildProcess(t *testing.T) {
	if os.Getenv("JEAN2_UNDO_RESTORE_CHILD") == "" {
		t.Skip("the child of TestRestoreKilledMidwayResumes")
	}
	ctx := t.Context()
	db, err := store.Open(ctx, os.Getenv("JEAN2_UNDO_DB"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Dir: os.Getenv("JEAN2_UNDO_DIR")})
	if err != nil {
		t.Fatal(err)
	}
	s.afterApply = func() {
		fmt.Println("applied")
		time.Sleep(time.Minute)
	}
	_, err = s.Restore(ctx, db, os.Getenv("JEAN2_UNDO_SESSION"), os.Getenv("JEAN2_UNDO_MESSAGE"), RestoreOptions{})
	t.Fatalf("the restore returned (%v) instead of waiting to be killed", err)
}

// TestRestoreKilledMidwayResumes: a restore of 1,400 files changed by a shell is killed
// (SIGKILL, a real process) after it put the files back and before it marked its ledgers
// restored. The next process finds the restore cut short, says so, and completes it
// without blaming jean2's own writes as changes made outside it.
func TestRestoreKilledMidwayResumes(t *testing.T) {
	const files = 1400
	e := newEnv(t, Options{})
	e.sh(fmt.Sprintf(`mkdir src; i=0; while [ $i -lt %d ]; do printf "v0 $i" > src/f$i.txt; i=$((i+1)); done`, files))
	before := tree(t, e.root)
	m := e.turn(func(*toolfs.FS) {
		e.sh(fmt.Sprintf(`i=0; while [ $i -lt %d ]; do printf "v1 $i" > src/f$i.txt; i=$((i+1)); done; printf new > src/added.txt`, files))
	})
	if n := len(m.ledger.Changes); n != files+1 {
		t.Fatalf("the turn's ledger holds %d changes, want %d", n, files+1)
	}

	killedRestore(t, e, m.user.ID)

	// What the killed restore did is on disk: every file is back, but its ledgers are
	// not marked restored. The new process knows a restore was cut short.
	cut, err := e.s.CutShort()
	must(t, err)
	if len(cut) != 1 || cut[0].SessionID != e.session.ID || cut[0].MessageID != m.user.ID || len(cut[0].Ledgers) != 1 {
		t.Fatalf("CutShort after the kill = %+v, want the restore of session %s to %s", cut, e.session.ID, m.user.ID)
	}
	dry, err := e.s.Restore(e.ctx, e.db, e.session.ID, m.user.ID, RestoreOptions{DryRun: true})
	must(t, err)
	if dry.CutShort != m.user.ID {
		t.Fatalf("a dry run does not say a restore was cut short: %+v", dry.CutShort)
	}
	// A second restore completes it, without blaming jean2's own writes.
	report, err := e.s.Restore(e.ctx, e.db, e.session.ID, m.user.ID, RestoreOptions{})
	if err != nil {
		t.Fatalf("restore after the crash: %.300s… (conflicts %d)", err, len(report.Conflicts))
	}
	// The killed restore had put every file back already: completing it rewrites the
	// 1,400 files with the same content (added.txt is gone already).
	if r := report.Resumed; r == nil || !r.AfterCrash || r.MessageID != m.user.ID || len(r.Restored) != files {
		t.Fatalf("the report does not say the restore cut short was completed: resumed %v", r != nil)
	}
	sameTree(t, "after the resumed restore", tree(t, e.root), before)
	if cut, _ := e.s.CutShort(); len(cut) != 0 {
		t.Fatalf("the journal outlived the completed restore: %+v", cut)
	}
	l, err := e.db.LedgerForMessage(e.ctx, m.assistant.ID)
	must(t, err)
	if l.RestoredAt.IsZero() {
		t.Fatal("the ledger is not marked restored")
	}
}

func killedRestore(t *testing.T, e *env, messageID string) {
	t.Helper()
	must(t, e.s.Close())
	cmd := exec.Command(os.Args[0], "-test.run=^TestRestoreChildProcess$", "-test.v")
	cmd.Env = append(os.Environ(), "JEAN2_UNDO_RESTORE_CHILD=1", "JEAN2_UNDO_DB="+e.dbPath, "JEAN2_UNDO_DIR="+e.dir,
		"JEAN2_UNDO_SESSION="+e.session.ID, "JEAN2_UNDO_MESSAGE="+messageID)
	out, err := cmd.StdoutPipe()
	must(t, err)
	cmd.Stderr = os.Stderr
	must(t, cmd.Start())
	applied := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		var lines []string
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if sc.Text() == "applied" {
				applied <- true
				return
			}
		}
		t.Logf("child output:\n%s", strings.Join(lines, "\n"))
		applied <- false
	}()
	select {
	case ok := <-applied:
		if !ok {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the child restore ended without reaching the files' end")
		}
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the child restore did not put the files back in 2 minutes")
	}
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the child was not killed by SIGKILL: %v", err)
	}
	e.open()
}

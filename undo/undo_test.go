package undo

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jean2/jean2/tool"
	"github.com/jean2/jean2/toolfs"
)

// TestShellChangesRestoreExactly: a shell command edits, creates, deletes, chmods, retargets
// a link and removes a tree between Begin and Finish; the changes become ledger entries with
// undo data, and Restore puts everything back byte for byte and mode for mode.
func TestShellChangesRestoreExactly(t *testing.T) {
	e := newEnv(t, Options{})
	e.write("edit.txt", "old line\n", 0o644)
	bin := make([]byte, 4096)
	for i := range bin {
		bin[i] = byte(i * 31)
	}
	e.write("del.bin", string(bin), 0o600)
	e.write("mode.sh", "#!/bin/sh\n", 0o644)
	e.write("keep.txt", "untouched", 0o640)
	e.write("dir/sub/deep.txt", "deep", 0o600)
	e.write("dir/top.txt", "top", 0o644)
	must(t, os.Chmod(e.path("dir/sub"), 0o750))
	must(t, os.Symlink("edit.txt", e.path("link")))
	must(t, os.Mkdir(e.path("emptydir"), 0o700))
	e.write("same-size.txt", "aaaa", 0o644)
	e.write(".git/HEAD", "ref: refs/heads/main\n", 0o644)
	before := tree(t, e.root)

	m := e.turn(func(*toolfs.FS) {
		e.sh(`
			printf 'new line\n' > edit.txt
			rm del.bin
			chmod 755 mode.sh
			rm -r dir
			ln -sfn keep.txt link
			chmod 755 emptydir
			printf 'bbbb' > same-size.txt
			printf 'fresh' > new.txt
			mkdir -p newdir/a && printf 'x' > newdir/a/b.txt
			umask 077 && printf 'secret' > private.txt
			printf 'x' > .git/index
		`)
	})
	got := pathsOf(m.ledger.Changes, ToolOutside)
	want := []string{"dir", "edit.txt", "del.bin", "emptydir", "link", "mode.sh", "new.txt", "newdir", "newdir/a", "newdir/a/b.txt", "private.txt", "same-size.txt"}
	for i := range want {
		want[i] = e.path(want[i])
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("changes found on disk:\n got  %v\n want %v", got, want)
	}
	ops := map[string]string{}
	for _, c := range m.ledger.Changes {
		ops[strings.TrimPrefix(c.Path, e.root+"/")] = c.Op
		if !c.Disk || !c.OK || c.Before == nil {
			t.Errorf("change %+v lacks disk, ok or undo data", c)
		}
	}
	for rel, op := range map[string]string{"edit.txt": "write", "del.bin": "rm", "mode.sh": OpChmod, "dir": "rm",
		"link": OpSymlink, "emptydir": OpChmod, "new.txt": "write", "newdir": "mkdir"} {
		if ops[rel] != op {
			t.Errorf("%s: op %q, want %q", rel, ops[rel], op)
		}
	}
	if s := tool.Summarize(m.ledger.Changes); s.Changed != len(want) || s.Failed != 0 {
		t.Errorf("summary %+v", s)
	}

	rep, err := e.s.Restore(e.ctx, e.db, e.session.ID, m.user.ID, RestoreOptions{})
	if err != nil {
		t.Fatalf("restore: %v (report %+v)", err, rep)
	}
	restored := tree(t, e.root)
	// .git is skipped: the shell's .git/index stays, the rest is as before the turn.
	if restored[".git/index"] == "" {
		t.Error(".git/index was touched by the restore")
	}
	delete(restored, ".git/index")
	sameTree(t, "after restore", restored, before)
	if !rep.Applied || len(rep.Conflicts) != 0 || len(rep.Recreated) != 2 || !slices.Contains(rep.Removed, e.path("newdir")) {
		t.Fatalf("report %+v", rep)
	}
	if rep.Ledgers[0] != m.ledger.ID {
		t.Fatalf("ledgers %v", rep.Ledgers)
	}
	l, err := e.db.LedgerForMessage(e.ctx, m.assistant.ID)
	if err != nil || l.RestoredAt.IsZero() {
		t.Fatalf("the ledger was not marked restored: %+v, %v", l, err)
	}
	// Restoring again does nothing: the ledger was undone.
	rep, err = e.s.Restore(e.ctx, e.db, e.session.ID, m.user.ID, RestoreOptions{})
	if err != nil || len(rep.Ledgers) != 0 || len(rep.Restored)+len(rep.Removed)+len(rep.Recreated) != 0 {
		t.Fatalf("second restore: %+v, %v", rep, err)
	}
}

// scenario runs three turns mixing ctx.fs and shell changes and returns the tree before
// each turn and after the last.
func scenario(t *testing.T, e *env) ([]turnMsgs, []map[string]string) {
	e.write("a.txt", "a0", 0o644)
	e.write("b.txt", "b0", 0o644)
	e.write("c.txt", "c0", 0o600)
	var turns []turnMsgs
	var states []map[string]string
	states = append(states, tree(t, e.root))
	turns = append(turns, e.turn(func(f *toolfs.FS) {
		must(t, f.WriteFile(e.ctx, e.path("a.txt"), []byte("a1")))
		e.sh(`printf b1 > b.txt; printf new > n.txt`)
	}))
	states = append(states, tree(t, e.root))
	turns = append(turns, e.turn(func(f *toolfs.FS) {
		e.sh(`printf a2-shell > a.txt; chmod 600 a.txt`)
		must(t, f.WriteFile(e.ctx, e.path("a.txt"), []byte("a3")))
		must(t, f.Remove(e.ctx, e.path("b.txt"), false))
		e.sh(`mkdir d; printf e > d/e.txt`)
		must(t, f.WriteFile(e.ctx, e.path("d/f.txt"), []byte("f")))
	}))
	states = append(states, tree(t, e.root))
	turns = append(turns, e.turn(func(f *toolfs.FS) {
		e.sh(`rm -r d; printf c-shell > c.txt`)
		must(t, f.WriteFile(e.ctx, e.path("c.txt"), []byte("c3")))
		must(t, f.Mkdir(e.ctx, e.path("g/h"), true))
		e.sh(`printf x > g/h/x.txt`)
	}))
	states = append(states, tree(t, e.root))
	return turns, states
}

// TestMixedTurnsRestoreToMiddleThenFirst: ctx.fs and shell changes in one turn and across
// three; Restore to the middle turn gives the tree before it, then Restore to the first
// gives the tree before everything.
func TestMixedTurnsRestoreToMiddleThenFirst(t *testing.T) {
	e := newEnv(t, Options{})
	turns, states := scenario(t, e)

	// Turn 2: the shell wrote a.txt before ctx.fs did, so ctx.fs's undo data (a2-shell) is
	// not the turn's start (a1): the snapshot's change comes first and carries a1.
	var first *tool.Change
	for i, c := range turns[1].ledger.Changes {
		if c.Path == e.path("a.txt") {
			first = &turns[1].ledger.Changes[i]
			break
		}
	}
	if first == nil || first.Tool != ToolOutside || string(first.Before.Content) != "a1" {
		t.Fatalf("the first change of a.txt in turn 2 is %+v", first)
	}
	// ctx.fs's own changes are not repeated when its undo data is the turn's start.
	for _, c := range turns[0].ledger.Changes {
		if c.Path == e.path("a.txt") && c.Tool == ToolOutside {
			t.Fatalf("turn 1 repeats ctx.fs's write of a.txt: %+v", turns[0].ledger.Changes)
		}
	}

	rep, err := e.s.Restore(e.ctx, e.db, e.session.ID, turns[1].user.ID, RestoreOptions{})
	if err != nil {
		t.Fatalf("restore to turn 2: %v\n%+v", err, rep)
	}
	sameTree(t, "restored to turn 2", tree(t, e.root), states[1])
	if len(rep.Ledgers) != 2 {
		t.Fatalf("restore to turn 2 undid %d ledgers", len(rep.Ledgers))
	}
	rep, err = e.s.Restore(e.ctx, e.db, e.session.ID, turns[0].assistant.ID, RestoreOptions{})
	if err != nil {
		t.Fatalf("restore to turn 1: %v\n%+v", err, rep)
	}
	sameTree(t, "restored to turn 1", tree(t, e.root), states[0])
	if len(rep.Ledgers) != 1 || rep.Ledgers[0] != turns[0].ledger.ID {
		t.Fatalf("restore to turn 1 undid %v", rep.Ledgers)
	}
}

// TestMixedTurnsRestoreToFirstDirectly goes from after the third turn straight to before
// the first.
func TestMixedTurnsRestoreToFirstDirectly(t *testing.T) {
	e := newEnv(t, Options{})
	turns, states := scenario(t, e)
	if _, err := e.s.Restore(e.ctx, e.db, e.session.ID, turns[0].user.ID, RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "restored to turn 1", tree(t, e.root), states[0])
}

// TestOutsideEditRefusedThenForced: a file changed outside jean2 after the turn refuses the
// restore, naming it (and a file made outside jean2 inside a folder the turn made); DryRun
// lists the plan and changes nothing; Force overrides.
func TestOutsideEditRefusedThenForced(t *testing.T) {
	e := newEnv(t, Options{})
	e.write("x.txt", "x0", 0o644)
	e.write("quiet.txt", "q0", 0o644)
	before := tree(t, e.root)
	m := e.turn(func(f *toolfs.FS) {
		e.sh(`printf x1 > x.txt; printf y > y.txt; mkdir z; printf z > z/z.txt; printf q1 > quiet.txt`)
	})
	// Outside jean2, after the turn: an editor saves x.txt, a build drops z/extra.o.
	e.write("x.txt", "x-edited-by-hand", 0o644)
	e.write("z/extra.o", "obj", 0o644)
	edited := tree(t, e.root)

	rep, err := e.s.Restore(e.ctx, e.db, e.session.ID, m.user.ID, RestoreOptions{})
	var refused *RefusedError
	if !errors.Is(err, ErrRefused) || !errors.As(err, &refused) {
		t.Fatalf("restore over an outside edit: %v", err)
	}
	for _, p := range []string{e.path("x.txt"), e.path("z/extra.o")} {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("the refusal does not name %s: %v", p, err)
		}
	}
	var named []string
	for _, c := range rep.Conflicts {
		named = append(named, c.Path)
	}
	slices.Sort(named)
	if want := []string{e.path("x.txt"), e.path("z/extra.o")}; !slices.Equal(named, want) {
		t.Fatalf("conflicts %+v, want %v", rep.Conflicts, want)
	}
	if rep.Applied {
		t.Fatal("a refused restore says it applied")
	}
	sameTree(t, "after the refusal", tree(t, e.root), edited)

	plan, err := e.s.Restore(e.ctx, e.db, e.session.ID, m.user.ID, RestoreOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after the dry run", tree(t, e.root), edited)
	slices.Sort(plan.Restored)
	slices.Sort(plan.Removed)
	if !plan.DryRun || plan.Applied || len(plan.Conflicts) != 2 ||
		!slices.Equal(plan.Restored, []string{e.path("quiet.txt"), e.path("x.txt")}) ||
		!slices.Equal(plan.Removed, []string{e.path("y.txt"), e.path("z")}) {
		t.Fatalf("dry-run plan %+v", plan)
	}
	if l, _ := e.db.LedgerForMessage(e.ctx, m.assistant.ID); !l.RestoredAt.IsZero() {
		t.Fatal("a dry run marked the ledger restored")
	}

	rep, err = e.s.Restore(e.ctx, e.db, e.session.ID, m.user.ID, RestoreOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Forced || !rep.Applied {
		t.Fatalf("forced report %+v", rep)
	}
	sameTree(t, "after the forced restore", tree(t, e.root), before)
}

// TestRestoreAcrossRestart: the turns are filed by one process; a new Snapshots over the
// same folder and a reopened database restore them.
func TestRestoreAcrossRestart(t *testing.T) {
	e := newEnv(t, Options{})
	turns, states := scenario(t, e)
	e.restart()
	// The outside-change check still works from the stored records.
	e.write("c.txt", "hand", 0o600)
	if _, err := e.s.Restore(e.ctx, e.db, e.session.ID, turns[2].user.ID, RestoreOptions{}); !errors.Is(err, ErrRefused) ||
		!strings.Contains(err.Error(), e.path("c.txt")) {
		t.Fatalf("after a restart an outside edit was not refused: %v", err)
	}
	e.write("c.txt", "c3", 0o600) // put back what jean2 left
	if _, err := e.s.Restore(e.ctx, e.db, e.session.ID, turns[1].user.ID, RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "restored after a restart", tree(t, e.root), states[1])
}

// TestInterruptedTurnResumedAfterRestart: a process dies mid-turn after a shell command
// changed files; the next one finds the turn, finishes and files it, and the changes
// restore.
func TestInterruptedTurnResumedAfterRestart(t *testing.T) {
	e := newEnv(t, Options{})
	e.write("a.txt", "a0", 0o644)
	before := tree(t, e.root)
	user, err := e.db.AppendMessage(e.ctx, userMsg(e))
	must(t, err)
	turn, err := e.s.Begin(e.ctx, TurnSpec{ID: "turn-7", SessionID: e.session.ID, Roots: []string{e.root}})
	must(t, err)
	if got, _ := e.s.Interrupted(); len(got) != 0 {
		t.Fatalf("a turn in progress is listed as interrupted: %+v", got)
	}
	e.sh(`printf a1 > a.txt; printf b > b.txt`)
	_ = turn
	e.restart() // the turn is never finished by this process

	list, err := e.s.Interrupted()
	must(t, err)
	if len(list) != 1 || list[0].ID != "turn-7" || list[0].SessionID != e.session.ID || list[0].StartedAt.IsZero() {
		t.Fatalf("Interrupted = %+v", list)
	}
	resumed, err := e.s.Resume(e.ctx, "turn-7")
	must(t, err)
	changes, err := resumed.Finish(e.ctx, nil)
	must(t, err)
	if len(changes) != 2 {
		t.Fatalf("resumed turn found %d changes: %+v", len(changes), changes)
	}
	asst, err := e.db.AppendMessage(e.ctx, assistantMsg(e))
	must(t, err)
	if _, err := resumed.File(e.ctx, e.db, asst.ID); err != nil {
		t.Fatal(err)
	}
	if list, _ := e.s.Interrupted(); len(list) != 0 {
		t.Fatalf("a filed turn is still listed: %+v", list)
	}
	if _, err := e.s.Restore(e.ctx, e.db, e.session.ID, user.ID, RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "restored", tree(t, e.root), before)
}

// TestLimitsNameUnrestorableFiles: a file over MaxFileSize is recorded without content; a
// restore that needs it refuses naming it; Partial restores the rest and lists it. A tree
// over MaxTreeBytes and a root over MaxEntries are named too.
func TestLimitsNameUnrestorableFiles(t *testing.T) {
	e := newEnv(t, Options{MaxFileSize: 1000, MaxTreeBytes: 3000})
	e.write("big.bin", strings.Repeat("B", 2000), 0o644)
	e.write("small.txt", "s0", 0o644)
	for i := range 5 {
		e.write("tree/f"+string(rune('a'+i)), strings.Repeat("t", 900), 0o644)
	}
	m := e.turn(func(*toolfs.FS) {
		e.sh(`printf changed > big.bin; printf s1 > small.txt; rm -r tree`)
	})
	var bigBefore, treeBefore *tool.FileState
	for _, c := range m.ledger.Changes {
		switch c.Path {
		case e.path("big.bin"):
			bigBefore = c.Before
		case e.path("tree"):
			treeBefore = c.Before
		}
	}
	if bigBefore == nil || !strings.Contains(bigBefore.Incomplete, e.path("big.bin")) || !strings.Contains(bigBefore.Incomplete, "limit") {
		t.Fatalf("big.bin's before-state %+v", bigBefore)
	}
	if treeBefore == nil || !strings.Contains(treeBefore.Incomplete, "3000-byte limit") {
		t.Fatalf("tree's before-state %+v", treeBefore)
	}
	_, err := e.s.Restore(e.ctx, e.db, e.session.ID, m.user.ID, RestoreOptions{})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), e.path("big.bin")) || !strings.Contains(err.Error(), e.path("tree")) {
		t.Fatalf("restore needing an uncopied file: %v", err)
	}
	if b, _ := os.ReadFile(e.path("small.txt")); string(b) != "s1" {
		t.Fatal("a refused restore changed small.txt")
	}
	rep, err := e.s.Restore(e.ctx, e.db, e.session.ID, m.user.ID, RestoreOptions{Partial: true})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(e.path("small.txt")); string(b) != "s0" {
		t.Fatalf("partial restore left small.txt = %q", b)
	}
	if b, _ := os.ReadFile(e.path("big.bin")); string(b) != "changed" {
		t.Fatalf("partial restore touched big.bin: %q", b)
	}
	if len(rep.Unrestorable) != 2 {
		t.Fatalf("unrestorable %+v", rep.Unrestorable)
	}

	// A root with more entries than MaxEntries is not tracked, and the turn says so.
	e2 := newEnv(t, Options{MaxEntries: 10})
	for i := range 20 {
		e2.write("f/"+string(rune('a'+i)), "x", 0o644)
	}
	turn, err := e2.s.Begin(e2.ctx, TurnSpec{SessionID: e2.session.ID, Roots: []string{e2.root}})
	must(t, err)
	if w := turn.Warnings(); len(w) != 1 || !strings.Contains(w[0], "more than 10 entries") {
		t.Fatalf("warnings %v", w)
	}
	e2.sh(`printf y > f/a`)
	changes, err := turn.Finish(e2.ctx, nil)
	if err != nil || len(changes) != 0 {
		t.Fatalf("an untracked root gave %+v, %v", changes, err)
	}
	must(t, turn.Discard())
}

// TestSymlinksAreNeverFollowed: links to /etc/passwd and to a file outside the workspace
// are recorded as links: the walks never read their targets, the store holds no copy of
// them, and restoring a retargeted or replaced link writes only the link.
func TestSymlinksAreNeverFollowed(t *testing.T) {
	e := newEnv(t, Options{})
	outside := filepath.Join(t.TempDir(), "outside.txt")
	must(t, os.WriteFile(outside, []byte("outside content"), 0o644))
	outsideInfo, err := os.Stat(outside)
	must(t, err)
	must(t, os.Symlink("/etc/passwd", e.path("passwd")))
	must(t, os.Symlink(outside, e.path("out")))
	must(t, os.Symlink(filepath.Dir(outside), e.path("outdir")))
	e.write("plain.txt", "p", 0o644)
	before := tree(t, e.root)
	e.takeReads()

	m := e.turn(func(*toolfs.FS) {
		e.sh(`ln -sfn plain.txt passwd; rm out; printf 'replaced' > out`)
	})
	// plain.txt, and out once the shell made it a regular file, are the only files read.
	for _, p := range e.takeReads() {
		if p != e.path("plain.txt") && p != e.path("out") {
			t.Errorf("a walk read %s", p)
		}
	}
	for _, target := range []string{"/etc/passwd", outside} {
		data, err := os.ReadFile(target)
		if err != nil {
			continue
		}
		if e.s.blobs.has(sha256.Sum256(data)) {
			t.Errorf("the store holds a copy of %s", target)
		}
	}
	if len(m.ledger.Changes) != 2 {
		t.Fatalf("changes %+v", m.ledger.Changes)
	}
	if _, err := e.s.Restore(e.ctx, e.db, e.session.ID, m.user.ID, RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "restored", tree(t, e.root), before)
	if data, _ := os.ReadFile(outside); string(data) != "outside content" {
		t.Fatalf("the link's target was written: %q", data)
	}
	if fi, _ := os.Stat(outside); !fi.ModTime().Equal(outsideInfo.ModTime()) {
		t.Fatal("the link's target was touched")
	}
}

// TestIncrementalBeginReusesHashes: an unchanged workspace costs a stat walk: no file is
// read again, no blob or manifest written — also in a new process. A change reads just the
// changed file.
func TestIncrementalBeginReusesHashes(t *testing.T) {
	e := newEnv(t, Options{})
	e.s.racy = 0 // the files below are older than the walks by more than a clock tick
	for i := range 50 {
		e.write("src/f"+string(rune('A'+i)), strings.Repeat("x", i), 0o644)
	}
	turn, err := e.s.Begin(e.ctx, TurnSpec{SessionID: e.session.ID, Roots: []string{e.root}})
	must(t, err)
	if n := len(e.takeReads()); n != 50 {
		t.Fatalf("cold Begin read %d files, want 50", n)
	}
	blobs := countFiles(t, filepath.Join(e.dir, "blobs"))
	manifests := countFiles(t, filepath.Join(e.dir, "manifests"))
	changes, err := turn.Finish(e.ctx, nil)
	must(t, err)
	if len(changes) != 0 {
		t.Fatalf("an unchanged workspace gave changes %+v", changes)
	}
	must(t, turn.Discard())
	if n := len(e.takeReads()); n != 0 {
		t.Fatalf("Finish on an unchanged workspace read %d files", n)
	}
	for round := range 2 {
		turn, err := e.s.Begin(e.ctx, TurnSpec{SessionID: e.session.ID, Roots: []string{e.root}})
		must(t, err)
		if r := e.takeReads(); len(r) != 0 {
			t.Fatalf("warm Begin (round %d) read %v", round, r)
		}
		if b, m := countFiles(t, filepath.Join(e.dir, "blobs")), countFiles(t, filepath.Join(e.dir, "manifests")); b != blobs || m != manifests {
			t.Fatalf("warm Begin wrote: blobs %d→%d, manifests %d→%d", blobs, b, manifests, m)
		}
		must(t, turn.Discard())
		e.restart()
		e.s.racy = 0
	}
	e.sh(`printf changed > src/fC`)
	turn, err = e.s.Begin(e.ctx, TurnSpec{SessionID: e.session.ID, Roots: []string{e.root}})
	must(t, err)
	if r := e.takeReads(); len(r) != 1 || r[0] != e.path("src/fC") {
		t.Fatalf("Begin after one change read %v", r)
	}
	must(t, turn.Discard())
}

// TestRacyFilesAreReadAgain: a file changed within the racy window of a walk is read again
// by the next one even though its stat key is unchanged.
func TestRacyFilesAreReadAgain(t *testing.T) {
	e := newEnv(t, Options{})
	e.write("hot.txt", "1", 0o644)
	for range 2 {
		turn, err := e.s.Begin(e.ctx, TurnSpec{SessionID: e.session.ID, Roots: []string{e.root}})
		must(t, err)
		if r := e.takeReads(); len(r) != 1 {
			t.Fatalf("a file changed just now was not read again: %v", r)
		}
		must(t, turn.Discard())
	}
}

// TestCtxFSOnlyTurnIsNotDuplicated: a turn whose changes all went through ctx.fs gets the
// recorded ledger back unchanged.
func TestCtxFSOnlyTurnIsNotDuplicated(t *testing.T) {
	e := newEnv(t, Options{})
	e.write("a.txt", "a", 0o644)
	e.write("d/x.txt", "x", 0o644)
	m := e.turn(func(f *toolfs.FS) {
		must(t, f.WriteFile(e.ctx, e.path("a.txt"), []byte("b")))
		must(t, f.WriteFile(e.ctx, e.path("n/new.txt"), []byte("n")))
		must(t, f.Remove(e.ctx, e.path("d"), true))
		must(t, f.Rename(e.ctx, e.path("a.txt"), e.path("c.txt")))
	})
	if got := pathsOf(m.ledger.Changes, ToolOutside); len(got) != 0 {
		t.Fatalf("ctx.fs's changes were repeated: %v", got)
	}
}

// TestPruneKeepsWhatTurnsNeed: Prune removes copies of contents no snapshot in use names,
// keeps those of the latest snapshot and of a turn not yet filed, and a restore (which needs
// only the ledger) still works after it.
func TestPruneKeepsWhatTurnsNeed(t *testing.T) {
	e := newEnv(t, Options{PruneEvery: -1})
	e.write("a.txt", "version 0", 0o644)
	before := tree(t, e.root)
	m := e.turn(func(*toolfs.FS) { e.sh(`printf 'version 1' > a.txt`) })
	e.sh(`printf 'version 2' > a.txt`)
	m2 := e.turn(func(*toolfs.FS) { e.sh(`printf 'version 3' > a.txt`) })
	_ = m2
	pending, err := e.s.Begin(e.ctx, TurnSpec{SessionID: e.session.ID, Roots: []string{e.root}})
	must(t, err)
	e.sh(`printf 'version 4' > a.txt`) // the pending turn's start (version 3) must stay

	rep, err := e.s.Prune(e.ctx)
	must(t, err)
	has := func(s string) bool { return e.s.blobs.has(sha256.Sum256([]byte(s))) }
	if has("version 0") || has("version 1") || has("version 2") {
		t.Fatalf("old copies survived the prune (%+v)", rep)
	}
	if !has("version 3") {
		t.Fatal("the pending turn's start was pruned")
	}
	if rep.Blobs != 3 || rep.Manifests == 0 {
		t.Fatalf("prune report %+v", rep)
	}
	changes, err := pending.Finish(e.ctx, nil)
	must(t, err)
	if len(changes) != 1 || string(changes[0].Before.Content) != "version 3" {
		t.Fatalf("the pending turn after a prune: %+v", changes)
	}
	must(t, pending.Discard())
	e.sh(`printf 'version 3' > a.txt`) // as the last filed turn left it
	if _, err := e.s.Restore(e.ctx, e.db, e.session.ID, m.user.ID, RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "restored after a prune", tree(t, e.root), before)
}

func TestManifestRoundTripAndDamage(t *testing.T) {
	m := &manifest{root: "/w", entries: []entry{
		{rel: "", kind: kindDir, key: statKey{mode: fs.ModeDir | 0o755, ino: 7}, skipped: true},
		{rel: "a", kind: kindFile, key: statKey{size: 3, mtime: -5, ctime: 99, ino: 1 << 60, dev: 3, mode: 0o644}, hashed: true, hash: sha256.Sum256([]byte("abc")), racy: true},
		{rel: "b", kind: kindSymlink, key: statKey{mode: fs.ModeSymlink | 0o777}, target: "../x"},
		{rel: "c", kind: kindFile, key: statKey{size: 1 << 40}, note: "too large"},
	}}
	data := m.encode()
	got, err := decodeManifest(data)
	must(t, err)
	for i := range m.entries {
		if !sameEntry(&got.entries[i], &m.entries[i]) {
			t.Fatalf("entry %d: got %+v, want %+v", i, got.entries[i], m.entries[i])
		}
	}
	for cut := range len(data) {
		if _, err := decodeManifest(data[:cut]); err == nil {
			t.Fatalf("a manifest cut at %d bytes decoded", cut)
		}
	}
	bad := bytes.Clone(data)
	bad[len(manifestMagic)+3] = 0xff
	_, _ = decodeManifest(bad) // must not panic
}

func TestSecondProcessIsRefused(t *testing.T) {
	e := newEnv(t, Options{})
	if _, err := New(Options{Dir: e.dir}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("a second store on one folder: %v", err)
	}
}

func TestBeginRejectsBadInput(t *testing.T) {
	e := newEnv(t, Options{})
	if _, err := e.s.Begin(e.ctx, TurnSpec{ID: "../../etc", Roots: []string{e.root}}); err == nil {
		t.Fatal("a turn id with slashes was accepted")
	}
	if _, err := e.s.Begin(e.ctx, TurnSpec{Roots: []string{"relative"}}); err == nil {
		t.Fatal("a relative root was accepted")
	}
	turn, err := e.s.Begin(e.ctx, TurnSpec{ID: "t1", Roots: []string{e.root, e.path("sub"), filepath.Join(e.root, "missing")}})
	must(t, err)
	if _, err := e.s.Begin(e.ctx, TurnSpec{ID: "t1", Roots: []string{e.root}}); err == nil {
		t.Fatal("a second turn with a live id was accepted")
	}
	if w := turn.Warnings(); len(w) != 2 {
		t.Fatalf("warnings %v", w)
	}
	if r := turn.Spec().Roots; len(r) != 1 || r[0] != e.root {
		t.Fatalf("roots %v", r)
	}
	if _, err := turn.File(e.ctx, e.db, "msg"); err == nil {
		t.Fatal("File before Finish was accepted")
	}
	must(t, turn.Discard())
	if _, err := turn.Finish(e.ctx, nil); err == nil {
		t.Fatal("Finish after Discard was accepted")
	}
}

func TestRestoreChecksTheSession(t *testing.T) {
	e := newEnv(t, Options{})
	m := e.turn(nil)
	if _, err := e.s.Restore(e.ctx, e.db, "ses_other", m.user.ID, RestoreOptions{}); err == nil {
		t.Fatal("a restore named another session's message")
	}
	if _, err := e.s.Restore(e.ctx, e.db, e.session.ID, "msg_missing", RestoreOptions{}); err == nil {
		t.Fatal("a restore at a missing message")
	}
}

func countFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	must(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	}))
	return n
}

// TestConcurrentTurnsAndPrune: turns of two sessions on one folder begin and finish at once
// while Prune runs; every turn sees its own change (run with -race).
func TestConcurrentTurnsAndPrune(t *testing.T) {
	e := newEnv(t, Options{PruneEvery: 1})
	for i := range 20 {
		e.write(filepath.Join("src", string(rune('a'+i))), "v0", 0o644)
	}
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for round := range 3 {
				turn, err := e.s.Begin(e.ctx, TurnSpec{SessionID: e.session.ID, Roots: []string{e.root}})
				if err != nil {
					errs <- err
					return
				}
				own := e.path(filepath.Join("own", string(rune('a'+g))+string(rune('0'+round))))
				if err := os.MkdirAll(filepath.Dir(own), 0o755); err != nil {
					errs <- err
					return
				}
				if err := os.WriteFile(own, []byte("x"), 0o644); err != nil {
					errs <- err
					return
				}
				changes, err := turn.Finish(e.ctx, nil)
				if err != nil {
					errs <- err
					return
				}
				if !slices.Contains(pathsOf(changes, ""), own) {
					errs <- errors.New("a turn missed its own change to " + own)
				}
				if err := turn.Discard(); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Go(func() {
		for range 5 {
			if _, err := e.s.Prune(e.ctx); err != nil {
				errs <- err
				return
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestKindChangesAndMovesRestore: a file replaced by a folder, a folder by a file, a link by
// a file, a file by a link, a folder moved elsewhere in the workspace.
func TestKindChangesAndMovesRestore(t *testing.T) {
	e := newEnv(t, Options{})
	e.write("f2d", "was a file", 0o640)
	e.write("d2f/inner.txt", "inner", 0o600)
	must(t, os.Symlink("f2d", e.path("l2f")))
	e.write("f2l", "target soon", 0o644)
	e.write("moved/a/b.txt", "b", 0o644)
	before := tree(t, e.root)
	m := e.turn(func(*toolfs.FS) {
		e.sh(`rm f2d && mkdir f2d && printf x > f2d/x
			rm -r d2f && printf file > d2f
			rm l2f && printf regular > l2f
			rm f2l && ln -s /etc/hostname f2l
			mv moved elsewhere`)
	})
	if n := tool.Summarize(m.ledger.Changes).Changed; n < 6 {
		t.Fatalf("only %d paths changed: %+v", n, m.ledger.Changes)
	}
	if _, err := e.s.Restore(e.ctx, e.db, e.session.ID, m.user.ID, RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "restored", tree(t, e.root), before)
}

// TestUnlistedFoldersClaimNothing: below a folder a walk could not list (no permission), a
// difference between the walks is no change — else a restore could remove files that were
// there all along.
func TestUnlistedFoldersClaimNothing(t *testing.T) {
	e := newEnv(t, Options{})
	dir := fs.ModeDir | 0o755
	begin := &manifest{root: e.root, entries: []entry{
		{rel: "", kind: kindDir, key: statKey{mode: dir}},
		{rel: "locked", kind: kindDir, key: statKey{mode: dir}, note: "could not be listed: permission denied"},
		{rel: "odd", kind: kindOther, unknown: true, note: "could not be examined: permission denied"},
	}}
	after := &manifest{root: e.root, entries: []entry{
		{rel: "", kind: kindDir, key: statKey{mode: dir}},
		{rel: "locked", kind: kindDir, key: statKey{mode: dir}},
		{rel: "locked/a.txt", kind: kindFile, key: statKey{mode: 0o644, size: 1}, hashed: true},
		{rel: "odd", kind: kindFile, key: statKey{mode: 0o644, size: 1}, hashed: true},
	}}
	res, err := e.s.diff(e.ctx, []rootDiff{{root: e.root, begin: begin, after: after}}, nil, time.Now())
	must(t, err)
	if len(res.changes) != 0 {
		t.Fatalf("changes claimed where nothing was known: %+v", res.changes)
	}
	if len(res.warnings) != 2 {
		t.Fatalf("warnings %v", res.warnings)
	}
}

//go:build linux

package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/tool"
	"github.com/jean2/jean2/undo"
)

// askers answers every ask of every session with answer, and keeps the asks.
type askers struct {
	mu     sync.Mutex
	answer bool
	asked  []tool.Ask
}

func (a *askers) Asker(string) tool.Asker {
	return tool.AskerFunc(func(_ context.Context, q tool.Ask) (json.RawMessage, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.asked = append(a.asked, q)
		return json.Marshal(a.answer)
	})
}

// fullUndoStore opens an undo store on a tmpfs of its own and fills the tmpfs, as a full
// disk leaves it.
func fullUndoStore(t *testing.T) (*undo.Snapshots, string) {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=256k"); err != nil {
		t.Skipf("a tmpfs cannot be mounted here (needs root): %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	s, err := undo.New(undo.Options{Dir: filepath.Join(dir, "undo")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	fill, err := os.Create(filepath.Join(dir, "fill"))
	if err != nil {
		t.Fatal(err)
	}
	defer fill.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := fill.Write(buf); err != nil {
			if !errors.Is(err, unix.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	return s, fill.Name()
}

// TestUndoStoreFullAsksFirst: the undo store is full (a tmpfs filled to the last byte) when
// a turn starts. Before any tool changes a file, the person is asked whether to go on
// without undo: "stop" leaves every file as it was and the turn ends with an error saying
// why; "go on" runs the tools, and Restore to before that turn then refuses, naming the
// workspace, rather than report success for changes it never recorded.
func TestUndoStoreFullAsksFirst(t *testing.T) {
	snaps, fill := fullUndoStore(t)
	who := &askers{}
	f := newFixture(t, fixtureOptions{adjust: func(o *harness.Options) { o.Snapshots, o.Askers = snaps, who }})
	ctx := context.Background()
	existing := filepath.Join(f.ws, "existing.txt")
	if err := os.WriteFile(existing, []byte("before, and large enough to need a blob"), 0o644); err != nil {
		t.Fatal(err)
	}
	write := providertest.OpenAIToolCall("gpt-test", "call_sh", "shell_write", jsonArgs(map[string]any{"files": map[string]string{existing: "after"}}))

	// The person says stop: nothing changes, and the turn says why (the model is not asked
	// again).
	f.srv.Push(write)
	_, fin := f.turn("change it")
	if b, _ := os.ReadFile(existing); string(b) != "before, and large enough to need a blob" {
		t.Fatalf("a tool changed the file though undo was unavailable and the person said stop: %q (turn %+v)", b, fin)
	}
	if len(who.asked) != 1 || who.asked[0].Type != tool.AskConfirm || !strings.Contains(who.asked[0].Description, "no space left") {
		t.Fatalf("the person was not asked before the tools ran, naming the full store: %+v", who.asked)
	}
	if fin.Reason != harness.ReasonError || !strings.Contains(fin.Error, "undo is not available") || !strings.Contains(fin.Error, "no tool ran") {
		t.Fatalf("the stopped turn does not say why: %+v", fin)
	}

	// The person says go on: the tool runs, and Restore says what it cannot put back.
	who.answer = true
	f.srv.Push(write, providertest.OpenAIText("gpt-test", "done"))
	info, fin := f.turn("change it anyway")
	if fin.Reason != harness.ReasonDone {
		t.Fatalf("turn %+v", fin)
	}
	if b, _ := os.ReadFile(existing); string(b) != "after" {
		t.Fatalf("the tool did not run after the person said go on: %q; asked %d; messages %+v", b, len(who.asked), f.messages()[len(f.messages())-2:])
	}
	report, err := f.h.Restore(ctx, f.session.ID, info.UserMessageID, undo.RestoreOptions{})
	if !errors.Is(err, undo.ErrRefused) || len(report.Unrestorable) != 1 || report.Unrestorable[0].Path != f.ws ||
		!strings.Contains(report.Unrestorable[0].Reason, "without undo snapshots") {
		t.Fatalf("restore over a turn without undo: %v, unrestorable %+v", err, report.Unrestorable)
	}
	// Still full: a restore that cannot be journaled does not start.
	report, err = f.h.Restore(ctx, f.session.ID, info.UserMessageID, undo.RestoreOptions{Partial: true})
	if err == nil || !strings.Contains(err.Error(), "journal the restore") || report.Applied {
		t.Fatalf("a restore began though it could not be journaled: %v, applied %v", err, report.Applied)
	}
	// With room again, a partial restore runs and lists what it could not put back.
	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	report, err = f.h.Restore(ctx, f.session.ID, info.UserMessageID, undo.RestoreOptions{Partial: true})
	if err != nil || len(report.Unrestorable) != 1 || report.Unrestorable[0].Path != f.ws {
		t.Fatalf("partial restore: %v, unrestorable %+v", err, report.Unrestorable)
	}
	if b, _ := os.ReadFile(existing); string(b) != "after" {
		t.Fatalf("the file changed by the turn without undo: %q", b)
	}
}

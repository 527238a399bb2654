package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jean2/jean2/provider/providertest"
)

// The disk that holds the SQLite database fills while a tool runs (issue 29, point 8): the
// turn's end cannot be written then, and is written once there is room again — turn.finished
// saying the disk was full, no message left "streaming" until a restart.
func TestTurnEndIsStoredOnceTheDiskHasRoom(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=16m"); err != nil {
		t.Skipf("cannot mount a small tmpfs here (needs root): %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	f := newFixture(t)
	f.tools = map[string]string{"sleep-it": sleepTool}
	f.cfg.DBPath = filepath.Join(dir, "jean2.db")
	f.start()
	f.fake.Push(providertest.NewOpenAIStream("test-model").Text("Working.").ToolCall(0, "call_sleep", "sleep_it", `{}`).Finish("tool_calls").Done().Reply())
	// The round after the tool (its reads come from the store, which a full disk still
	// serves): the model's request fails, and sealing that answer cannot be written either.
	f.fake.Push(providertest.OpenAIError(400, "invalid_request_error", "refused for the test"))
	_, ses := f.session()
	sock := f.dial("/api/sessions/"+ses.ID+"/ws", nil)
	var turn struct{ ID string }
	f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "wait"}, 202, &turn)
	for {
		ev, _ := sock.until("part.updated", 30*time.Second)
		if strings.Contains(string(ev.Payload), `"running"`) {
			break
		}
	}

	filler := filepath.Join(dir, "filler")
	fill(t, filler)
	// The tool ends while the disk is full.
	time.Sleep(6 * time.Second)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	msgs, fin := turnEndAfterOutage(t, f, ses.ID, turn.ID)
	if !strings.Contains(string(fin.Payload), `"reason":"error"`) || !strings.Contains(string(fin.Payload), "refused for the test") {
		t.Errorf("turn.finished does not carry the model's failure: %s", fin.Payload)
	}
	// The tool's outcome, which the full disk refused, is kept with the turn's end: before,
	// it was dropped, and the next turn found the call orphaned.
	if !strings.Contains(fmt.Sprint(msgs), "slept") {
		t.Errorf("the tool's result is lost: %+v", msgs)
	}
	// The session takes the next turn.
	f.fake.Push(providertest.OpenAIText("test-model", "Back."))
	f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "again"}, 202, nil)
}

// fill writes a file until its disk is full.
func fill(t *testing.T, path string) {
	t.Helper()
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := out.Write(chunk); err != nil {
			return
		}
	}
}

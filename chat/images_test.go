package chat

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/builtin"
	"github.com/jean2/jean2/provider/providertest"
)

// A tool's image in a real session (read-file of a PNG): the chat says what it is, its size
// and pixels, and where it saved it, rather than "[image … not shown]" (issue 25, point 2).
func TestRunSavesAToolsImage(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", cache)
	png, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC")
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "dot.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	srv, base, fake := testServer(t, builtin.ReadFile())
	fake.Push(providertest.NewOpenAIStream("test-model").ToolCall(0, "call_1", "read-file", fmt.Sprintf(`{"path":%q}`, filepath.Join(ws, "dot.png"))).
		Finish("tool_calls").Done().Reply(), providertest.OpenAIText("test-model", "A red dot."))
	in, typed := io.Pipe()
	var out screen
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Options{Server: base, Token: srv.Token(), Workspace: ws, Stdin: in, Stdout: &out})
	}()
	out.waitFor(t, "Type a message.")
	if _, err := io.WriteString(typed, "look at dot.png\n"); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "A red dot.")
	dir := filepath.Join(cache, "jean2", "images")
	out.waitFor(t, "[image/png 69 B, 1×1: saved to "+dir)
	saved, _ := filepath.Glob(filepath.Join(dir, "*.png"))
	if len(saved) != 1 || !strings.Contains(out.String(), saved[0]) {
		t.Fatalf("saved %v; the screen:\n%s", saved, out.String())
	}
	if b, err := os.ReadFile(saved[0]); err != nil || string(b) != string(png) {
		t.Fatalf("the saved file is not the image: %v", err)
	}
	_, _ = io.WriteString(typed, "/quit\n")
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after /quit")
	}
}

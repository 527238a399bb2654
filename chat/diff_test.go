package chat

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/builtin"
	"github.com/jean2/jean2/provider/providertest"
)

// issue 24: a model's edit inside a line is drawn in the terminal as the whole line removed
// and added, with its numbers, both on the tool call and in /diff of the turn (which reads
// the turn's changes as the web client's "Changed N files" dialog does).
func TestEditDrawnAsWholeLinesAndDiffOfTurn(t *testing.T) {
	srv, base, fake := testServer(t, builtin.Tools(builtin.Options{})...)
	ws := t.TempDir()
	calc := "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
	if err := os.WriteFile(filepath.Join(ws, "calc.py"), []byte(calc), 0o644); err != nil {
		t.Fatal(err)
	}
	fake.Push(providertest.OpenAIText("test-model", "Hello."))
	fake.Push(providertest.OpenAIToolCall("test-model", "call_1", "edit",
		`{"path":"calc.py","oldString":"a - b","newString":"(a - b)  # fixed"}`))
	fake.Push(providertest.OpenAIText("test-model", "Fixed."))
	in, typed := io.Pipe()
	var out screen
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Options{Server: base, Token: srv.Token(), Workspace: ws, Stdin: in, Stdout: &out})
	}()
	out.waitFor(t, "Type a message.")
	type_ := func(s string) {
		if _, err := io.WriteString(typed, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	type_("hi")
	out.waitFor(t, "Hello.")
	out.waitFor(t, "── done")
	mark := len(out.String())
	type_("fix sub")
	out.waitForAfter(t, mark, "── done")
	card := out.String()
	for _, want := range []string{"6   -    return a - b", "  6 +    return (a - b)  # fixed", "5 5  def sub(a, b):"} {
		if !strings.Contains(card, want) {
			t.Errorf("the edit's own diff lacks %q:\n%s", want, card)
		}
	}
	before := len(out.String())
	type_("/diff")
	out.waitFor(t, "Turn 1 of 1")
	out.waitFor(t, "+    return (a - b)  # fixed")
	time.Sleep(100 * time.Millisecond)
	shown := out.String()[before:]
	for _, want := range []string{"calc.py", "write by edit", "@@ -3,4 +3,4 @@", "6   -    return a - b", "  6 +    return (a - b)  # fixed"} {
		if !strings.Contains(shown, want) {
			t.Errorf("/diff lacks %q:\n%s", want, shown)
		}
	}
	type_("/diff 7")
	out.waitFor(t, "1 to 1")
	// /restore numbers the turns as /diff does: the greeting changed nothing and is not listed.
	before = len(out.String())
	type_("/restore")
	out.waitFor(t, "Turns that changed files:")
	type_("")
	out.waitFor(t, "(nothing was restored)")
	listed := out.String()[before:]
	if !strings.Contains(listed, `1) `) || !strings.Contains(listed, `"fix sub"`) || strings.Contains(listed, `"hi"`) || strings.Contains(listed, "2) ") {
		t.Errorf("/restore lists other turns than /diff numbers:\n%s", listed)
	}
	type_("/quit")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("Run did not return after /quit")
	}
}

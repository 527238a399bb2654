package harness_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/store"
)

// useWorkspace moves the fixture to a new session in a workspace at dir.
func (f *fixture) useWorkspace(dir string) {
	f.t.Helper()
	ctx := context.Background()
	w, err := f.db.CreateWorkspace(ctx, store.Workspace{Path: dir})
	if err != nil {
		f.t.Fatal(err)
	}
	if f.session, err = f.db.CreateSession(ctx, store.Session{WorkspaceID: w.ID, Provider: "fake", Model: f.model}); err != nil {
		f.t.Fatal(err)
	}
}

func answerOK(f *fixture) {
	f.srv.Push(providertest.NewOpenAIStream("gpt-test").Text("ok").Finish("stop").Usage(5, 1).Done().Reply())
}

// systemOf is the system message of the fixture's request i.
func systemOf(f *fixture, i int) string {
	f.t.Helper()
	req := f.openaiRequest(i)
	if len(req.Messages) == 0 || req.Messages[0].Role != "system" {
		f.t.Fatalf("request %d has no system message: %+v", i, req)
	}
	return text(req.Messages[0].Content)
}

// With no System configured the model is told what the built-ins are for; SetSystem's
// override reaches the next turn's request in its place, and "" brings the default back.
func TestSystemPromptDefaultAndOverride(t *testing.T) {
	f := newFixture(t, fixtureOptions{adjust: func(o *harness.Options) { o.System = "" }})
	answerOK(f)
	f.turn("first")
	sys := systemOf(f, 0)
	for _, want := range []string{"read-file before you change it", "edit (one replacement), multiedit", "Use write-file only to create a new file",
		"glob to find files", "todowrite", "no network", f.ws} {
		if !strings.Contains(sys, want) {
			t.Fatalf("default system prompt lacks %q:\n%s", want, sys)
		}
	}

	f.h.SetSystem("You are a pirate. Answer in rhymes.")
	answerOK(f)
	f.turn("second")
	sys = systemOf(f, 1)
	if !strings.HasPrefix(sys, "You are a pirate. Answer in rhymes.") || strings.Contains(sys, "read-file before you change it") || !strings.Contains(sys, f.ws) {
		t.Fatalf("overridden system prompt:\n%s", sys)
	}

	f.h.SetSystem("  ")
	answerOK(f)
	f.turn("third")
	if sys = systemOf(f, 2); !strings.HasPrefix(sys, harness.DefaultSystem) {
		t.Fatalf("system prompt after clearing the override:\n%s", sys)
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// AGENTS.md of $JEAN2_HOME, of the repository root and of the workspace join the system
// prompt, outermost first; a file above the repository root does not.
func TestInstructionFilesJoinSystemPrompt(t *testing.T) {
	home := t.TempDir()
	f := newFixture(t, fixtureOptions{adjust: func(o *harness.Options) { o.Home = home }})
	write(t, filepath.Join(home, "AGENTS.md"), "HOME-RULE: answer briefly.")
	outer := filepath.Join(f.root, "outer")
	repo := filepath.Join(outer, "repo")
	ws := filepath.Join(repo, "pkg", "app")
	write(t, filepath.Join(outer, "AGENTS.md"), "OUTSIDE-RULE: must not appear.")
	write(t, filepath.Join(repo, ".git", "HEAD"), "ref: refs/heads/main\n")
	write(t, filepath.Join(repo, "AGENTS.md"), "REPO-RULE: use tabs.")
	write(t, filepath.Join(repo, "pkg", "AGENTS.md"), "PKG-RULE: package notes.")
	write(t, filepath.Join(ws, "AGENTS.md"), "WS-RULE: run make test.")
	f.useWorkspace(ws)

	answerOK(f)
	f.turn("hi")
	sys := systemOf(f, 0)
	order := []string{"HOME-RULE", "REPO-RULE", "PKG-RULE", "WS-RULE"}
	last := -1
	for _, w := range order {
		i := strings.Index(sys, w)
		if i < 0 || i < last {
			t.Fatalf("%s missing or out of order in:\n%s", w, sys)
		}
		last = i
	}
	if strings.Contains(sys, "OUTSIDE-RULE") {
		t.Fatalf("a file above the repository root joined the prompt:\n%s", sys)
	}

	in := f.h.Instructions(ws)
	var scopes []string
	for _, file := range in.Files {
		scopes = append(scopes, file.Scope+":"+file.Path)
	}
	want := []string{"home:" + filepath.Join(home, "AGENTS.md"), "repository:" + filepath.Join(repo, "AGENTS.md"),
		"repository:" + filepath.Join(repo, "pkg", "AGENTS.md"), "workspace:" + filepath.Join(ws, "AGENTS.md")}
	if strings.Join(scopes, " ") != strings.Join(want, " ") {
		t.Fatalf("files in effect %v, want %v", scopes, want)
	}
}

// The attack: a workspace's AGENTS.md that is a symlink to a secret outside the
// repository would put the secret in the prompt sent to the provider. It is refused and
// listed with its error; a symlink inside the repository is followed; a huge file is cut.
func TestInstructionFilesAreReadSafely(t *testing.T) {
	root := t.TempDir()
	secret := filepath.Join(root, "secret.txt")
	write(t, secret, "SECRET-TOKEN-123")
	repo := filepath.Join(root, "repo")
	write(t, filepath.Join(repo, ".git", "HEAD"), "x")
	ws := filepath.Join(repo, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(ws, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(repo, "docs", "rules.md"), "IN-REPO-RULE")
	if err := os.Symlink(filepath.Join("docs", "rules.md"), filepath.Join(repo, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	in := harness.ReadInstructions(ws, "")
	if len(in.Files) != 2 {
		t.Fatalf("files %+v", in.Files)
	}
	if in.Files[0].Error != "" || in.Files[0].Bytes != len("IN-REPO-RULE") {
		t.Fatalf("in-repository symlink: %+v", in.Files[0])
	}
	if in.Files[1].Error == "" || in.Files[1].Bytes != 0 {
		t.Fatalf("symlink out of the repository was read: %+v", in.Files[1])
	}

	f := newFixture(t, fixtureOptions{})
	f.useWorkspace(ws)
	answerOK(f)
	f.turn("hi")
	sys := systemOf(f, 0)
	if strings.Contains(sys, "SECRET-TOKEN-123") || !strings.Contains(sys, "IN-REPO-RULE") {
		t.Fatalf("system prompt:\n%s", sys)
	}

	// A file past the cap is cut, and the prompt says so.
	big := filepath.Join(t.TempDir(), "big")
	write(t, filepath.Join(big, "AGENTS.md"), strings.Repeat("é", harness.MaxInstructionBytes))
	in = harness.ReadInstructions(big, "")
	if len(in.Files) != 1 || !in.Files[0].Truncated || in.Files[0].Bytes > harness.MaxInstructionBytes+3 {
		t.Fatalf("big file %+v", in.Files)
	}
}

// A model that stops sending in the middle of its answer: the turn ends with an error that
// says the model sent nothing for the idle timeout, and the partial answer is kept for
// people (dropped for the model); the session takes the next turn.
func TestTurnEndsOnProviderStall(t *testing.T) {
	f := newFixture(t, fixtureOptions{providerIdle: time.Second})
	f.srv.Push(providertest.NewOpenAIStream("gpt-test").Text("Thinking about").Pause(time.Minute).Text(" it").Finish("stop").Done().Reply())
	start := time.Now()
	_, fin := f.turn("hi")
	if fin.Reason != harness.ReasonError || !strings.Contains(fin.Error, "sent nothing for 1s") {
		t.Fatalf("finished %+v", fin)
	}
	if time.Since(start) > 30*time.Second {
		t.Fatal("the stall was waited out")
	}
	msgs := f.messages()
	if last := msgs[len(msgs)-1]; last.Status != store.StatusError || last.Content != "Thinking about" {
		t.Fatalf("the partial answer %+v", last)
	}
	answerOK(f)
	if _, fin := f.turn("again"); fin.Reason != harness.ReasonDone {
		t.Fatalf("next turn %+v", fin)
	}
}

// The attack: a FIFO planted as AGENTS.md would block the read (and with it every turn of
// the workspace) until something writes to it. It is listed as not a regular file, at once.
func TestInstructionFIFODoesNotBlock(t *testing.T) {
	ws := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(ws, "AGENTS.md"), 0o644); err != nil {
		t.Skip("no FIFO here:", err)
	}
	done := make(chan harness.Instructions, 1)
	go func() { done <- harness.ReadInstructions(ws, "") }()
	select {
	case in := <-done:
		if len(in.Files) != 1 || in.Files[0].Error == "" || in.Files[0].Bytes != 0 {
			t.Fatalf("FIFO read as %+v", in.Files)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reading the instructions blocked on a FIFO")
	}
}

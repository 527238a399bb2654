//go:build unix

package chat

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jean2/jean2/internal/pgtest"
	"github.com/jean2/jean2/provider/providertest"
)

// While the server's PostgreSQL is down, the API answers 503 database_unavailable: the chat
// says "database unavailable, retrying" (before: "Could not start the turn: …" and the
// message was dropped), sends the message again by itself, and the turn runs once the
// database is back, without the person typing it again.
func TestChatRetriesWhileTheDatabaseIsUnavailable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	pg, err := pgtest.Start(ctx)
	cancel()
	if err != nil {
		if os.Getenv(pgtest.EnvRequire) == "1" {
			t.Fatal(err)
		}
		t.Skipf("no PostgreSQL for this test: %v", err)
	}
	t.Cleanup(func() {
		if err := pg.Stop(); err != nil {
			t.Error(err)
		}
	})
	srv, base, fake := testServerOn(t, pg.URL("postgres"))
	fake.Push(providertest.OpenAIText("test-model", "First answer."), providertest.OpenAIText("test-model", "Answer after the outage."))
	in, typed := io.Pipe()
	var out screen
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Options{Server: base, Token: srv.Token(), Workspace: t.TempDir(), Stdin: in, Stdout: &out})
	}()
	out.waitFor(t, "Type a message.")
	if _, err := io.WriteString(typed, "before\n"); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "First answer.")
	out.waitFor(t, "── done")

	pg.Halt()
	// A message the person gives up on (Ctrl-C) while it waits is not sent.
	if _, err := io.WriteString(typed, "given up\n"); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "database unavailable, retrying")
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil { // Run owns SIGINT meanwhile
		t.Fatal(err)
	}
	out.waitFor(t, "Not sent: you stopped waiting for the server.")
	out.waitFor(t, "(your message: given up)")

	if _, err := io.WriteString(typed, "during the outage\n"); err != nil {
		t.Fatal(err)
	}
	// An event stream opened meanwhile is refused with the same 503: it says the database
	// (not a lost connection) and waits for it.
	sessionID := strings.Fields(out.String()[strings.Index(out.String(), "session ses_")+len("session "):])[0]
	states := make(chan string, 8)
	watcher := NewClient(base, srv.Token())
	watcher.onDatabase = func(down bool, words string) { states <- fmt.Sprint(down, " ", words) }
	sctx, scancel := context.WithCancel(context.Background())
	defer scancel()
	items := make(chan streamItem, 64)
	go watcher.streamEvents(sctx, sessionID, 1<<40, items)
	select {
	case st := <-states:
		if !strings.HasPrefix(st, "true database unavailable, retrying") {
			t.Fatalf("the stream's first database state: %q", st)
		}
	case it := <-items:
		t.Fatalf("the stream refused by the database gave %+v before saying the database", it)
	case <-time.After(30 * time.Second):
		t.Fatal("the stream refused by the database said nothing of it")
	}
	time.Sleep(3 * time.Second) // a few retries answered 503
	if got := out.String(); strings.Contains(got, "Could not start the turn") || strings.Contains(got, "Answer after the outage.") {
		t.Fatalf("with the database down the chat gave up, or the turn ran:\n%s", got)
	}
	rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
	defer rcancel()
	if err := pg.Resume(rctx); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "the database is available again")
	select {
	case it := <-items:
		if it.hello == nil {
			t.Fatalf("the stream's first item after the outage: %+v, want its hello", it)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the stream did not connect after the outage")
	}
	select {
	case st := <-states:
		if st != "false " {
			t.Errorf("the stream's database state after the outage: %q", st)
		}
	case <-time.After(30 * time.Second):
		t.Error("the stream did not say the database was back")
	}
	out.waitFor(t, "Answer after the outage.")
	out.waitFor(t, "── done")
	if n := strings.Count(out.String(), "database unavailable, retrying"); n != 1 {
		t.Errorf("the outage was announced %d times, want once:\n%s", n, out.String())
	}
	var msgs struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := NewClient(base, srv.Token()).Call(context.Background(), "GET", "/api/sessions/"+sessionID+"/messages", nil, &msgs); err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs.Messages {
		if m.Content == "given up" {
			t.Errorf("the message given up was sent: %+v", msgs.Messages)
		}
	}
	t.Logf("the screen:\n%s", out.String())
	if _, err := io.WriteString(typed, "/quit\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("Run did not return after /quit; the screen:\n%s", out.String())
	}
}

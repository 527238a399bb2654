package chat

import (
	"context"
	"io"
	"os"
	"strings"
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
	if _, err := io.WriteString(typed, "during the outage\n"); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "database unavailable, retrying")
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
	out.waitFor(t, "Answer after the outage.")
	out.waitFor(t, "── done")
	if n := strings.Count(out.String(), "database unavailable, retrying"); n != 1 {
		t.Errorf("the outage was announced %d times, want once:\n%s", n, out.String())
	}
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

package e2e_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/internal/pgtest"
	"github.com/jean2/jean2/server"
)

// TestDatabaseUnavailableRetries (issue 29): while the server's PostgreSQL is down, the API
// answers 503 database_unavailable. The page shows a state of its own, "Database
// unavailable, retrying…" naming the database (before: the message box got the 503's text
// back as an error and the message was not sent), sends the message again by itself, and
// once the database is back the turn runs without the person sending it again, and the
// state goes.
func TestDatabaseUnavailableRetries(t *testing.T) {
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
	f := newFixtureWith(t, func(f *fixture, cfg *server.Config) { cfg.DatabaseURL = pg.URL("postgres") })
	s := f.session("outage")
	f.fake.Push(text("Answered after the outage."))
	f.open("#/s/" + s.ID)

	pg.Halt()
	f.typeInto("#composer-input", "sent during the outage\n")
	f.waitText("#database-status", "Database unavailable, retrying")
	f.waitText("#database-status", "PostgreSQL")
	time.Sleep(3 * time.Second) // a few retries answered 503
	if errText := f.eval(`[...document.querySelectorAll(".composer .error, #notices .notice.error")].map((e) => e.textContent).join(" | ")`); errText != "" {
		t.Errorf("the outage shows as a failure: %q", errText)
	}
	if box := f.eval(`document.querySelector("#composer-input").value`); box != "" {
		t.Errorf("the message came back to the box as unsent: %q", box)
	}

	rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
	defer rcancel()
	if err := pg.Resume(rctx); err != nil {
		t.Fatal(err)
	}
	f.waitText(".message.assistant", "Answered after the outage.")
	f.waitJS("the database state gone", `document.getElementById("database-status") === null`)
	if got := f.eval(`[...document.querySelectorAll(".message.user")].map((m) => m.textContent).join(" | ")`); strings.Count(got, "sent during the outage") != 1 {
		t.Errorf("the user messages read %q: want the message once", got)
	}
}

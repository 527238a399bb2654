package pgtest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// Each URL is its own empty database on a live server, and it is gone after the test.
func TestURLIsAFreshDatabase(t *testing.T) {
	ctx := context.Background()
	var first string
	t.Run("a", func(t *testing.T) {
		first = URL(t)
		conn, err := pgx.Connect(ctx, first)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `CREATE TABLE x (id int)`); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `INSERT INTO x VALUES (1)`); err != nil {
			t.Fatal(err)
		}
		second := URL(t)
		if second == first {
			t.Fatalf("two calls gave the same database %s", first)
		}
		c2, err := pgx.Connect(ctx, second)
		if err != nil {
			t.Fatal(err)
		}
		defer c2.Close(ctx)
		var n int
		if err := c2.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("a fresh database has %d tables", n)
		}
		// Left open on purpose: dropping must not wait for the test's own connections.
	})
	if first == "" {
		return // skipped: no Postgres
	}
	if _, err := pgx.Connect(ctx, first); err == nil {
		t.Fatalf("database %s outlived its test", first)
	}
}

// A cluster started by Start serves, and Stop removes every file it made.
func TestStartStop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a second cluster")
	}
	ctx := context.Background()
	c, err := Start(ctx)
	if err != nil {
		unavailable(t, err.Error())
	}
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		c.Stop()
		t.Fatal(err)
	}
	var v string
	err = conn.QueryRow(ctx, `SHOW server_version`).Scan(&v)
	conn.Close(ctx)
	if err != nil {
		c.Stop()
		t.Fatal(err)
	}
	t.Logf("postgres %s in %s", v, c.Dir())
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.Dir()); !os.IsNotExist(err) {
		t.Fatalf("cluster folder %s left behind: %v", c.Dir(), err)
	}
	if _, err := pgx.Connect(ctx, c.URL("postgres")); err == nil {
		t.Fatal("stopped cluster still answers")
	}
}

// Without a PostgreSQL, a test that asks for one fails with the reason when
// JEAN2_TEST_REQUIRE_POSTGRES=1 (scripts/test) and skips with it otherwise. Run as a child
// test binary whose PostgreSQL folder does not exist.
func TestMissingPostgresFailsOrSkips(t *testing.T) {
	if os.Getenv("PGTEST_CHILD") == "1" {
		t.Logf("got %s", URL(t))
		return
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "JEAN2_TEST_POSTGRES") && !strings.HasPrefix(kv, EnvRequire+"=") {
			env = append(env, kv)
		}
	}
	env = append(env, "PGTEST_CHILD=1", EnvBin+"=/nonexistent/pg/bin")
	run := func(extra ...string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissingPostgresFailsOrSkips$", "-test.v")
		cmd.Env = append(env, extra...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run(EnvRequire + "=1")
	if err == nil || !strings.Contains(out, "--- FAIL") || !strings.Contains(out, "no PostgreSQL for this test") ||
		!strings.Contains(out, "/nonexistent/pg/bin") {
		t.Fatalf("required and missing: %v\n%s", err, out)
	}
	out, err = run()
	if err != nil || !strings.Contains(out, "--- SKIP") || !strings.Contains(out, "/nonexistent/pg/bin") {
		t.Fatalf("missing, not required: %v\n%s", err, out)
	}
}

package pgtest

import (
	"context"
	"os"
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

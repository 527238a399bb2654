package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/jean2/jean2/internal/pgtest"
)

// The store's tests run on both databases: SQLite in a temporary folder, and a fresh
// database on a throwaway PostgreSQL (internal/pgtest).
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// backends are the databases forEachBackend runs a test on, by name.
var backends = []struct {
	name string
	open func(t testing.TB) *DB
}{
	{"sqlite", openTest},
	{"postgres", openPostgresTest},
}

// forEachBackend runs fn as a subtest on each database, each time with a fresh one.
func forEachBackend(t *testing.T, fn func(t *testing.T, db *DB)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { fn(t, b.open(t)) })
	}
}

// openPostgresTest opens a fresh database on the test cluster and closes it at the end.
func openPostgresTest(t testing.TB) *DB {
	t.Helper()
	db, err := OpenPostgres(context.Background(), pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// openTest opens a fresh SQLite database in t's temporary folder and closes it at the end.
func openTest(t testing.TB) *DB {
	t.Helper()
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "jean2.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// reopen closes db and opens the same database again, as a restarted server does.
func reopen(t testing.TB, db *DB) *DB {
	t.Helper()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	var db2 *DB
	var err error
	if db.dialect == dialectPostgres {
		db2, err = OpenPostgres(context.Background(), db.url)
	} else {
		db2, err = Open(context.Background(), db.Path())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db2.Close() })
	return db2
}

package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func mustWorkspace(t testing.TB, db *DB, path string) Workspace {
	t.Helper()
	w, err := db.CreateWorkspace(context.Background(), Workspace{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func mustSession(t testing.TB, db *DB, ws string) Session {
	t.Helper()
	s, err := db.CreateSession(context.Background(), Session{WorkspaceID: ws, Title: "t", Provider: "openai", Model: "gpt-x"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDurabilityFullSyncsEveryCommit(t *testing.T) {
	ctx := context.Background()
	db, err := OpenWith(ctx, filepath.Join(t.TempDir(), "full.db"), Options{Durability: DurabilityFull})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var syncLevel int
	if err := db.write.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&syncLevel); err != nil || syncLevel != 2 {
		t.Fatalf("synchronous=%d (%v), want 2 (FULL)", syncLevel, err)
	}
	if _, err := OpenWith(ctx, filepath.Join(t.TempDir(), "x.db"), Options{Durability: "sometimes"}); err == nil || !strings.Contains(err.Error(), "normal, full") {
		t.Fatalf("a bad durability was not refused in words that help: %v", err)
	}
	for in, want := range map[string]Durability{"": DurabilityNormal, "FULL": DurabilityFull, " normal ": DurabilityNormal} {
		if got, err := ParseDurability(in); err != nil || got != want {
			t.Fatalf("ParseDurability(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseDurability("paranoid"); err == nil {
		t.Fatal("ParseDurability accepted paranoid")
	}
}

func TestOpenSetsPragmasAndMigratesOnce(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	var mode string
	var fk, syncLevel int
	if err := db.write.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if err := db.write.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&fk); err != nil {
		t.Fatal(err)
	}
	if err := db.write.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&syncLevel); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" || fk != 1 || syncLevel != 1 {
		t.Fatalf("journal_mode=%s foreign_keys=%d synchronous=%d, want wal 1 1 (NORMAL)", mode, fk, syncLevel)
	}
	// Readers refuse writes.
	if _, err := db.read.ExecContext(ctx, `INSERT INTO grants (id, tool, duration, granted_at, data) VALUES ('x','t','session',1,'{}')`); err == nil {
		t.Fatal("the read pool accepted a write")
	}

	ms, err := loadMigrations("migrations")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		db = reopen(t, db)
	}
	v, err := db.SchemaVersion(ctx)
	if err != nil || v != len(ms) {
		t.Fatalf("schema version %d, %v; want %d", v, err, len(ms))
	}
	var rows int
	if err := db.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations`).Scan(&rows); err != nil || rows != len(ms) {
		t.Fatalf("%d schema_migrations rows (%v), want %d: a migration ran twice", rows, err, len(ms))
	}
}

func TestOpenCreatesAPrivateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new", "home", "jean2.db")
	db, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateWorkspace(context.Background(), Workspace{Path: "/w"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal"} {
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: mode %v, %v; want 0600", p, st.Mode(), err)
		}
	}
}

func TestOpenRefusesNewerDatabase(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		if _, err := db.write.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'from_the_future', 0)`); err != nil {
			t.Fatal(err)
		}
		db.Close()
		var err error
		if db.dialect == dialectPostgres {
			_, err = OpenPostgres(ctx, db.url)
		} else {
			_, err = Open(ctx, db.Path())
		}
		if !errors.Is(err, ErrTooNew) {
			t.Fatalf("Open of a newer database = %v, want ErrTooNew", err)
		}
		for _, want := range []string{"999", "upgrade jean2", db.Path()} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not mention %q", err, want)
			}
		}
	})
}

func TestOpenConcurrentlyMigratesOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jean2.db")
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			db, err := Open(context.Background(), path)
			if err != nil {
				errs <- err
				return
			}
			errs <- db.Close()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	db, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ms, err := loadMigrations("migrations")
	if err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := db.read.QueryRow(`SELECT COUNT(*) FROM schema_migrations`).Scan(&rows); err != nil || rows != len(ms) {
		t.Fatalf("%d migration rows (%v), want one per migration, %d", rows, err, len(ms))
	}
}

func TestOpenPathWithURICharacters(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a?b#c d%20")
	db, err := Open(context.Background(), filepath.Join(dir+".db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateWorkspace(context.Background(), Workspace{Path: "/w"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir + ".db"); err != nil {
		t.Fatalf("the database is not where it was asked to be: %v", err)
	}
	if db.Path() != dir+".db" {
		t.Fatalf("Path() = %q", db.Path())
	}
}

package store

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/jean2/jean2/internal/pgtest"
)

// Both dialects have the same migrations, by number and name: a schema step added to one
// and forgotten in the other fails here.
func TestMigrationSetsMatch(t *testing.T) {
	lite, err := loadMigrations(dialectSQLite.migrationDir())
	if err != nil {
		t.Fatal(err)
	}
	pg, err := loadMigrations(dialectPostgres.migrationDir())
	if err != nil {
		t.Fatal(err)
	}
	names := func(ms []migration) string {
		var out []string
		for _, m := range ms {
			out = append(out, m.name)
		}
		return strings.Join(out, ", ")
	}
	if names(lite) != names(pg) {
		t.Fatalf("the migrations differ:\nsqlite:   %s\npostgres: %s", names(lite), names(pg))
	}
	// And no stray file (a typo in a name would not load at all).
	entries, err := fs.ReadDir(migrationFiles, dialectPostgres.migrationDir())
	if err != nil || len(entries) != len(pg) {
		t.Fatalf("%d files in %s, %d migrations (%v)", len(entries), dialectPostgres.migrationDir(), len(pg), err)
	}
}

func TestRebind(t *testing.T) {
	for in, want := range map[string]string{
		`SELECT a FROM t WHERE b = ? AND c = ?`:                `SELECT a FROM t WHERE b = $1 AND c = $2`,
		`VALUES (?1, ?2, (SELECT x FROM y WHERE z = ?2), ?12)`: `VALUES ($1, $2, (SELECT x FROM y WHERE z = $2), $12)`,
		`SELECT '?' , "a?", ? -- what?` + "\n" + `, ?`:         `SELECT '?' , "a?", $1 -- what?` + "\n" + `, $2`,
		`SELECT 'it''s ?', ?`:                                  `SELECT 'it''s ?', $1`,
		`SELECT 1`:                                             `SELECT 1`,
	} {
		if got := rebind(in); got != want {
			t.Errorf("rebind(%q) = %q, want %q", in, got, want)
		}
	}
	d := &pgDialect{cache: map[string]string{}}
	got := d.translate(`UPDATE sessions SET updated_at = MAX(updated_at, ?) WHERE id = ? AND seq = (SELECT MAX(seq) FROM m)`)
	if want := `UPDATE sessions SET updated_at = GREATEST(updated_at, $1) WHERE id = $2 AND seq = (SELECT MAX(seq) FROM m)`; got != want {
		t.Errorf("translate = %q, want %q", got, want)
	}
}

// A URL that does not parse, and a server that does not answer, are refused with the server
// named and the password nowhere in the message.
func TestOpenPostgresErrorsNameTheServerNotThePassword(t *testing.T) {
	ctx := context.Background()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	for _, url := range []string{
		"postgres://jean2:s3cretpw@" + addr + "/jean2?sslmode=disable&connect_timeout=5",
		"postgres://jean2:s3cretpw@" + addr + "/jean2?sslmode=nonsense",
		"postgresql://jean2:s3cretpw@[::1/jean2",
	} {
		_, err := OpenPostgres(ctx, url)
		if err == nil {
			t.Fatalf("OpenPostgres(%s) worked", url)
		}
		t.Log(err)
		if strings.Contains(err.Error(), "s3cretpw") {
			t.Errorf("the password is in the error: %v", err)
		}
		if !strings.Contains(err.Error(), "127.0.0.1") && !strings.Contains(err.Error(), "::1") {
			t.Errorf("the server is not named: %v", err)
		}
	}
	for in, want := range map[string]string{
		"postgres://u:pw@h:5/d":                     "postgres://u:xxxxx@h:5/d",
		"postgres://u:p%40ss%2Fw@h:5/d":             "postgres://u:xxxxx@h:5/d",
		"postgres://u@h:5/d?password=pw&sslmode=no": "postgres://u@h:5/d?password=xxxxx&sslmode=no",
		"postgres://u:pw@[::1/d":                    "postgres://u:xxxxx@[::1/d",
		"postgres://h/d":                            "postgres://h/d",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%s) = %q, want %q", in, got, want)
		}
	}
	// A server that answers but has no such database says so.
	missing, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	missing.Path = "/no_such_database"
	if _, err := OpenPostgres(ctx, missing.String()); err == nil || !strings.Contains(err.Error(), `"no_such_database" does not exist`) ||
		!strings.Contains(err.Error(), missing.Host) {
		t.Errorf("a missing database: %v", err)
	}
	// A password with characters a URL encodes stays out of the errors too, in both forms.
	for _, u := range []string{
		"postgres://jean2:s3cret%40pw@" + addr + "/jean2?sslmode=disable",
		"postgres://jean2@" + addr + "/jean2?sslmode=disable&password=s3cret%40pw",
		"postgres://jean2:s3cret%40pw@" + addr + "/jean2?sslmode=nonsense",
	} {
		_, err := OpenPostgres(ctx, u)
		if err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("OpenPostgres(%s): %v", u, err)
		}
	}
	// The Open every command uses takes the URL too.
	if _, err := Open(ctx, "postgres://jean2:s3cretpw@"+addr+"/jean2?sslmode=disable"); err == nil || strings.Contains(err.Error(), "s3cretpw") ||
		!strings.Contains(err.Error(), addr) {
		t.Errorf("Open of an unreachable server: %v", err)
	}
}

// Instances starting together on one new database apply each migration once: the advisory
// lock makes the others wait.
func TestPostgresOpenConcurrentlyMigratesOnce(t *testing.T) {
	url := pgtest.URL(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			db, err := OpenPostgres(context.Background(), url)
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
	db, err := OpenPostgres(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ms, _ := loadMigrations(dialectPostgres.migrationDir())
	var rows int
	if err := db.read.QueryRow(`SELECT COUNT(*) FROM schema_migrations`).Scan(&rows); err != nil || rows != len(ms) {
		t.Fatalf("%d migration rows (%v), want one per migration, %d", rows, err, len(ms))
	}
	if v, err := db.SchemaVersion(context.Background()); err != nil || v != len(ms) {
		t.Fatalf("schema version %d, %v", v, err)
	}
	// The readers refuse writes, as SQLite's query_only ones do.
	if _, err := db.read.Exec(`INSERT INTO grants (id, tool, duration, granted_at, data) VALUES ('x','t','session',1,'{}')`); err == nil {
		t.Fatal("the read pool accepted a write")
	}
	// Errors map as on SQLite.
	ctx := context.Background()
	w, err := db.CreateWorkspace(ctx, Workspace{Path: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateWorkspace(ctx, Workspace{Path: "/w"}); !errors.Is(err, ErrConflict) {
		t.Fatalf("a second workspace on one folder: %v, want ErrConflict", err)
	}
	if _, err := db.CreateSession(ctx, Session{WorkspaceID: "ws_nope"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a session in a missing workspace: %v, want ErrNotFound", err)
	}
	if _, err := db.Workspace(ctx, w.ID+"x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a missing workspace: %v, want ErrNotFound", err)
	}
}

// Text Postgres cannot hold (NUL, bytes that are not UTF-8) does not fail the write: SQLite
// keeps it as given, Postgres with U+FFFD in place of each such character.
func TestOddTextIsStored(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		ws := mustWorkspace(t, db, "/w")
		ses := mustSession(t, db, ws.ID)
		odd := "a\x00b\xffc ok é"
		m, err := db.AppendMessage(ctx, Message{SessionID: ses.ID, Role: RoleAssistant, Content: odd})
		if err != nil {
			t.Fatal(err)
		}
		got, err := db.ListMessages(ctx, ses.ID)
		if err != nil || len(got) != 1 || got[0].ID != m.ID {
			t.Fatalf("%+v, %v", got, err)
		}
		want := odd
		if db.dialect == dialectPostgres {
			want = "a\uFFFDb\uFFFDc ok é"
		}
		if got[0].Content != want {
			t.Fatalf("content %q, want %q", got[0].Content, want)
		}
	})
}

// A read transaction sees one snapshot on both databases: a message added after it began
// is not in it (ListMessagesAfter reads messages, then their parts, in one).
func TestReadTransactionIsOneSnapshot(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		ses := mustSession(t, db, mustWorkspace(t, db, "/w").ID)
		if _, err := db.AppendMessage(ctx, Message{SessionID: ses.ID, Role: RoleUser, Content: "one"}); err != nil {
			t.Fatal(err)
		}
		tx, err := db.read.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		count := func() int {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM messages WHERE session_id = ?`, ses.ID).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		if n := count(); n != 1 {
			t.Fatalf("%d messages", n)
		}
		if _, err := db.AppendMessage(ctx, Message{SessionID: ses.ID, Role: RoleUser, Content: "two"}); err != nil {
			t.Fatal(err)
		}
		if n := count(); n != 1 {
			t.Fatalf("the read transaction saw a later write: %d messages", n)
		}
	})
}

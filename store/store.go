// Package store owns jean2's database: an embedded SQLite file (pure Go, modernc.org/sqlite)
// at $JEAN2_HOME/jean2.db holding workspaces, sessions, their messages and parts, the turns'
// ledgers, remembered permission grants, API token hashes and the event log clients catch
// up from. Its schema comes from migrations embedded in the binary.
//
// Durability: the database runs in WAL mode. By default with synchronous=NORMAL: a write
// that returned without error survives a crash of the process (kill -9 included: the WAL
// frames are in the operating system's hands before the commit returns), and the WAL is
// synced to disk at checkpoints, so a power cut or a kernel crash may lose the last commits
// before one. DurabilityFull (synchronous=FULL) syncs the WAL at every commit and survives
// those too, at the price of an fsync per commit: on the 2-core VM jean2 is developed on,
// BenchmarkAppendPartText measured 10.9 ms a commit with FULL against 0.06 ms with NORMAL
// under load, which alone would cost an agent round (a handful of commits) more than the
// harness's whole budget. jean2 serve takes JEAN2_DB_SYNC=full to choose it.
//
// Concurrency: one connection writes (SQLite allows one writer at a time; queueing in Go is
// cheaper and fairer than spinning on SQLITE_BUSY), a small pool reads alongside it (WAL
// readers never block the writer). Safe for concurrent use.
package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"modernc.org/sqlite" // registers the "sqlite" driver
	sqlite3 "modernc.org/sqlite/lib"
)

//go:embed migrations/*.sql migrations/postgres/*.sql
var migrationFiles embed.FS

// ErrNotFound is wrapped by every lookup, update and delete of an id that does not exist.
var ErrNotFound = errors.New("not found")

// ErrConflict is wrapped when a write would break a uniqueness rule (a second workspace on
// one folder, a second ledger for one message).
var ErrConflict = errors.New("conflict")

// ErrTooNew is wrapped when the database was written by a newer jean2 than this one.
var ErrTooNew = errors.New("database schema is newer than this jean2")

// DB is jean2's database. Close it when done.
type DB struct {
	path    string  // the file, or the server and database (no password) on Postgres
	dialect dialect // which database (postgres.go)
	url     string  // Postgres: the URL it was opened with
	write   *sql.DB // one connection: every write goes through it, in order
	read    *sql.DB // readers, query-only
	stmts   prepared
	ckpt    *checkpointer // checkpoints the log behind the writer's back (checkpoint.go)
}

// Durability says when a commit reaches the disk (see the package comment).
type Durability string

// Durabilities.
const (
	// DurabilityNormal survives a process crash; a power cut may lose the last commits.
	DurabilityNormal Durability = "normal"
	// DurabilityFull survives a power cut too, with an fsync per commit.
	DurabilityFull Durability = "full"
)

// ParseDurability reads a durability as a person writes it ("", "normal" or "full").
func ParseDurability(s string) (Durability, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", string(DurabilityNormal):
		return DurabilityNormal, nil
	case string(DurabilityFull):
		return DurabilityFull, nil
	}
	return "", fmt.Errorf("database durability %q is not one of normal, full", s)
}

// Options configure Open; the zero value is the default.
type Options struct {
	Durability Durability // "" → DurabilityNormal
}

// options are the knobs tests and benchmarks turn.
type options struct {
	synchronous string
}

// Open opens (creating if needed) the database at path with the default options and brings
// its schema up to date. It refuses a database whose schema is newer than this binary knows
// (ErrTooNew).
func Open(ctx context.Context, path string) (*DB, error) {
	return OpenWith(ctx, path, Options{})
}

// OpenWith is Open with options.
//
// A path that is a postgres:// URL opens that server instead (OpenPostgres); durability is
// then the server's own (its synchronous_commit).
func OpenWith(ctx context.Context, path string, opts Options) (*DB, error) {
	sync := "NORMAL"
	switch opts.Durability {
	case "", DurabilityNormal:
	case DurabilityFull:
		sync = "FULL"
	default:
		return nil, fmt.Errorf("open database %s: durability %q is not one of normal, full", RedactURL(path), opts.Durability)
	}
	if IsPostgresURL(path) {
		return OpenPostgres(ctx, path)
	}
	return open(ctx, path, options{synchronous: sync})
}

func open(ctx context.Context, path string, o options) (*DB, error) {
	if path == "" {
		return nil, errors.New("open database: no path given")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	if err := createPrivate(abs); err != nil {
		return nil, fmt.Errorf("open database %s: %w", abs, err)
	}
	// A file: URI keeps a path with '?' or '#' in it from being read as parameters.
	uri := (&url.URL{Scheme: "file", Path: abs}).String()
	common := "_pragma=busy_timeout(" + strconv.Itoa(busyTimeoutMillis) + ")&_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)" +
		"&_pragma=synchronous(" + o.synchronous + ")"
	// The writer leaves checkpoints to the checkpointer.
	write, err := sql.Open("sqlite", uri+"?"+common+"&_txlock=immediate&_pragma=wal_autocheckpoint(0)"+
		"&_pragma=journal_size_limit("+strconv.Itoa(walSizeLimit)+")")
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", abs, err)
	}
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	write.SetConnMaxLifetime(0)
	write.SetConnMaxIdleTime(0)

	db := &DB{path: abs, write: write}
	// The writer connects first: it sets WAL mode on a new file before any reader opens it.
	// Switching a new file to WAL while another process opens it too can fail at once with
	// SQLITE_BUSY (the busy timeout does not cover it), so setting up is retried briefly.
	if err := retryBusy(ctx, func() error {
		if err := write.PingContext(ctx); err != nil {
			return err
		}
		return db.migrate(ctx)
	}); err != nil {
		write.Close()
		return nil, fmt.Errorf("open database %s: %w", abs, explainFull(abs, err))
	}
	read, err := sql.Open("sqlite", uri+"?"+common+"&_pragma=query_only(1)")
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("open database %s: %w", abs, err)
	}
	readers := max(2, min(runtime.GOMAXPROCS(0), 8))
	read.SetMaxOpenConns(readers)
	read.SetMaxIdleConns(readers)
	db.read = read
	if err := retryBusy(ctx, func() error { return read.PingContext(ctx) }); err != nil {
		db.Close()
		return nil, fmt.Errorf("open database %s: %w", abs, explainFull(abs, err))
	}
	if err := db.prepare(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open database %s: %w", abs, explainFull(abs, err))
	}
	ckpt, err := sql.Open("sqlite", uri+"?"+common)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open database %s: %w", abs, err)
	}
	ckpt.SetMaxOpenConns(1)
	ckpt.SetMaxIdleConns(1)
	db.ckpt = newCheckpointer(ckpt, write)
	return db, nil
}

// createPrivate makes the database's folder and an empty file readable by its owner only,
// when they do not exist yet: the database holds conversations. SQLite gives the -wal and
// -shm files it makes the main file's permissions.
func createPrivate(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// Path is the database file's absolute path; on PostgreSQL, postgres://host:port/database
// (without user or password).
func (db *DB) Path() string { return db.path }

// Close closes the database; the WAL is checkpointed into the main file when the last
// connection closes.
func (db *DB) Close() error {
	var errs []error
	if db.ckpt != nil {
		db.ckpt.close()
		errs = append(errs, db.ckpt.conn.Close())
	}
	db.stmts.close()
	if db.read != nil {
		errs = append(errs, db.read.Close())
	}
	errs = append(errs, db.write.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close database %s: %w", db.path, err)
	}
	return nil
}

// migration is one embedded schema step: NNNN_name.sql.
type migration struct {
	version int
	name    string
	sql     string
}

// migrationDir is where the dialect's migrations are: the same steps, by number and name,
// in each (TestMigrationSetsMatch).
func (d dialect) migrationDir() string {
	if d == dialectPostgres {
		return "migrations/postgres"
	}
	return "migrations"
}

func loadMigrations(dir string) ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, dir)
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		num, rest, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration file %s: name must be NNNN_description.sql", e.Name())
		}
		body, err := migrationFiles.ReadFile(dir + "/" + e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: strings.TrimSuffix(rest, ".sql"), sql: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %d (%s): versions must run 1, 2, 3… without gaps", m.version, m.name)
		}
	}
	return out, nil
}

// migrate applies the migrations the database lacks, each in its own transaction together
// with its schema_migrations row, so a crash leaves the schema at a whole step. On
// PostgreSQL each transaction first takes an advisory lock, so that instances starting
// together wait for each other instead of applying a step twice (SQLite's BEGIN IMMEDIATE
// does that on one file).
func (db *DB) migrate(ctx context.Context) error {
	ms, err := loadMigrations(db.dialect.migrationDir())
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	tooNew := func(current int) error {
		where := "point JEAN2_HOME at another folder"
		if db.dialect == dialectPostgres {
			where = "point JEAN2_DATABASE_URL at another database"
		}
		return fmt.Errorf("%w: it is at version %d, this jean2 knows up to %d; upgrade jean2, or %s",
			ErrTooNew, current, len(ms), where)
	}
	begin := func(tx *sql.Tx) error {
		if db.dialect == dialectPostgres {
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(`+strconv.FormatInt(migrationLock, 10)+`)`); err != nil {
				return fmt.Errorf("take the migrations' lock: %w", err)
			}
			_, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
				version    bigint PRIMARY KEY,
				name       text NOT NULL,
				applied_at bigint NOT NULL
			)`)
			return err
		}
		return nil
	}
	if db.dialect == dialectSQLite {
		if _, err := db.write.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER PRIMARY KEY,
			name       TEXT NOT NULL,
			applied_at INTEGER NOT NULL
		) STRICT`); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
	}
	for _, m := range ms {
		err := db.tx(ctx, func(tx *sql.Tx) error {
			if err := begin(tx); err != nil {
				return err
			}
			// Read the version inside the transaction (immediate on SQLite, after the lock
			// on Postgres): another process opening the same database at the same moment
			// waits here instead of applying m twice.
			current, err := schemaVersion(ctx, tx)
			if err != nil {
				return err
			}
			if current > len(ms) {
				return tooNew(current)
			}
			if current >= m.version {
				return nil
			}
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return fmt.Errorf("apply migration %d (%s): %w", m.version, m.name, err)
			}
			_, err = tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				m.version, m.name, now())
			return err
		})
		if err != nil {
			return err
		}
	}
	// A database with no pending migration still gets the newer-than-us check.
	return db.tx(ctx, func(tx *sql.Tx) error {
		if err := begin(tx); err != nil {
			return err
		}
		current, err := schemaVersion(ctx, tx)
		if err == nil && current > len(ms) {
			err = tooNew(current)
		}
		return err
	})
}

func schemaVersion(ctx context.Context, q querier) (int, error) {
	var v int
	if err := q.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// SchemaVersion is the version of the newest migration applied to the database.
func (db *DB) SchemaVersion(ctx context.Context) (int, error) {
	return schemaVersion(ctx, db.read)
}

// querier is what both *sql.DB and *sql.Tx offer for reading.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// tx runs fn in a write transaction (BEGIN IMMEDIATE on the one writer connection) and
// commits when fn returns nil.
func (db *DB) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	done := false
	defer func() {
		if !done {
			_ = tx.Rollback() // fn failed or panicked: free the one writer connection
		}
	}()
	if err := fn(tx); err != nil {
		return err
	}
	done = true
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	db.committed()
	return nil
}

// execWrite runs one write statement on the writer, committed on its own.
func (db *DB) execWrite(ctx context.Context, query string, args ...any) (sql.Result, error) {
	res, err := db.write.ExecContext(ctx, query, args...)
	if err == nil {
		db.committed()
	}
	return res, err
}

// execStmt runs one prepared write statement, committed on its own.
func (db *DB) execStmt(ctx context.Context, id stmtID, args ...any) (sql.Result, error) {
	res, err := db.stmts.write[id].ExecContext(ctx, args...)
	if err == nil {
		db.committed()
	}
	return res, err
}

// committed counts a commit for the checkpointer.
func (db *DB) committed() {
	if db.ckpt != nil {
		db.ckpt.committed()
	}
}

// busyTimeoutMillis is how long a statement waits for a lock another connection (or
// process) holds.
const busyTimeoutMillis = 10000

// noLimit is a LIMIT that keeps every row, in both dialects.
const noLimit = math.MaxInt64

// now is the current time in the database's unit, Unix milliseconds.
func now() int64 { return time.Now().UnixMilli() }

// toTime turns a stored Unix-milliseconds value back into a UTC time.
func toTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// nullTime turns a nullable stored time into a zero time when it is NULL.
func nullTime(ms sql.NullInt64) time.Time {
	if !ms.Valid {
		return time.Time{}
	}
	return toTime(ms.Int64)
}

// fromTime turns t into Unix milliseconds; a zero t means now.
func fromTime(t time.Time) int64 {
	if t.IsZero() {
		return now()
	}
	return t.UnixMilli()
}

// NewID returns a fresh id: prefix, then the time in milliseconds and 64 random bits in
// hex, so ids sort by creation time.
func NewID(prefix string) string {
	var b [14]byte
	ms := uint64(time.Now().UnixMilli())
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	_, _ = rand.Read(b[6:])
	return prefix + hex.EncodeToString(b[:])
}

// isUnique reports whether err is the database refusing a duplicate key.
func isUnique(err error) bool {
	code := sqliteCode(err)
	return code == sqlite3.SQLITE_CONSTRAINT_UNIQUE || code == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY ||
		pgCode(err) == "23505" // unique_violation
}

// isForeignKey reports whether err is the database refusing a reference to a missing row.
func isForeignKey(err error) bool {
	return sqliteCode(err) == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY ||
		pgCode(err) == "23503" // foreign_key_violation
}

func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()
	}
	return 0
}

// affected turns an update or delete that touched no row into ErrNotFound.
func affected(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// retryBusy runs f again while it fails with SQLITE_BUSY, for up to about ten seconds.
func retryBusy(ctx context.Context, f func() error) error {
	delay := 5 * time.Millisecond
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := f()
		var se *sqlite.Error
		if err == nil || !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}

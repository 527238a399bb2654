package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// PostgreSQL: the same *DB, its statements written once in SQLite's dialect, which is the
// store's own (the embedded default). What differs between the two dialects lives here
// and nowhere else:
//
//   - statement text: placeholders ? and ?N become $N, and the scalar MAX(a, b) becomes
//     GREATEST(a, b), by pgDialect.translate in the driver under database/sql, so no call
//     site knows which database it talks to;
//   - the schema: migrations/postgres/NNNN_name.sql, the same steps as migrations/*.sql;
//   - migrations take an advisory lock (migrationLock) so instances starting together
//     apply each step once;
//   - errors: a unique violation is ErrConflict and a missing reference ErrNotFound, as
//     with SQLite (isUnique, isForeignKey);
//   - text: Postgres's holds no NUL and only UTF-8; such characters are replaced (pgText);
//   - search: a text search vector instead of FTS5 (search.go, searchMessages);
//   - no PRAGMAs and no checkpointer: the server does its own.
//
// Concurrency is kept as SQLite's: one connection writes, so the writes of one jean2 are
// applied in the order they were made (a message's seq is the next of its session, found
// in the INSERT), and a pool of read-only connections reads beside it.

// dialect says which database a DB talks to.
type dialect int

const (
	dialectSQLite dialect = iota
	dialectPostgres
)

// IsPostgresURL reports whether s names a PostgreSQL server (postgres:// or postgresql://)
// rather than a file.
func IsPostgresURL(s string) bool {
	s = strings.ToLower(strings.TrimSpace(s))
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// OpenPostgres opens jean2's database on the PostgreSQL server that dbURL names
// (postgres://user:password@host:port/database?sslmode=…) and brings its schema up to
// date, refusing a schema newer than this binary knows (ErrTooNew). Errors name the server
// and database, never the password.
func OpenPostgres(ctx context.Context, dbURL string) (*DB, error) {
	where := RedactURL(dbURL)
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return nil, fmt.Errorf("open database %s: the URL does not parse (postgres://user:password@host:port/database): %w", where, redactErr(err, dbURL))
	}
	if cfg.ConnectTimeout == 0 {
		// Without one, a server that drops packets holds the start for the system's TCP
		// timeout (minutes) before saying anything; connect_timeout in the URL overrides it.
		cfg.ConnectTimeout = defaultConnectTimeout
	}
	where = fmt.Sprintf("postgres://%s/%s", net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), cfg.Database)
	if strings.HasPrefix(cfg.Host, "/") {
		where = fmt.Sprintf("postgres:///%s?host=%s&port=%d", cfg.Database, cfg.Host, cfg.Port)
	}
	tr := &pgDialect{cache: map[string]string{}}
	write := sql.OpenDB(pgConnector{inner: stdlib.GetConnector(*cfg), tr: tr})
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	write.SetConnMaxLifetime(0)
	db := &DB{path: where, dialect: dialectPostgres, url: dbURL, write: write}
	if err := write.PingContext(ctx); err != nil {
		write.Close()
		return nil, fmt.Errorf("open database %s: cannot connect: %w", where, redactErr(unwrapBadConn(ctx, cfg), dbURL))
	}
	if err := db.migrate(ctx); err != nil {
		write.Close()
		return nil, fmt.Errorf("open database %s: %w", where, err)
	}
	rcfg := cfg.Copy()
	// The readers cannot write by mistake, like SQLite's query_only readers. And a read
	// transaction sees one snapshot, as a SQLite read transaction does (Postgres's default,
	// read committed, takes a new one per statement: the parts read after the messages
	// could be newer than them); read-only, it can never fail to serialize.
	rcfg.RuntimeParams["default_transaction_read_only"] = "on"
	rcfg.RuntimeParams["default_transaction_isolation"] = "repeatable read"
	read := sql.OpenDB(pgConnector{inner: stdlib.GetConnector(*rcfg), tr: tr})
	readers := max(2, min(runtime.GOMAXPROCS(0), 8))
	read.SetMaxOpenConns(readers)
	read.SetMaxIdleConns(readers)
	db.read = read
	if err := read.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open database %s: %w", where, redactErr(err, dbURL))
	}
	if err := db.prepare(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open database %s: %w", where, err)
	}
	return db, nil
}

// unwrapBadConn gets the reason a connection failed: database/sql's Ping turns every
// failure of the driver's Ping into driver.ErrBadConn, so connect once more by hand for
// the server's own words.
func unwrapBadConn(ctx context.Context, cfg *pgx.ConnConfig) error {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	conn.Close(ctx)
	return errors.New("the connection failed, then worked when tried again")
}

// RedactURL is dbURL with its password (in the user part or a password= parameter)
// replaced by "xxxxx", for messages and logs.
func RedactURL(dbURL string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		out := dbURL
		for _, secret := range passwords(dbURL) {
			out = strings.ReplaceAll(out, secret, "xxxxx")
		}
		return out
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// passwords are the forms dbURL's password may take in a message: as written in the URL
// (percent-encoded, or not when the URL does not parse) and decoded.
func passwords(dbURL string) []string {
	var out []string
	if cfg, err := pgconn.ParseConfig(dbURL); err == nil && cfg.Password != "" {
		out = append(out, cfg.Password)
	}
	if i := strings.Index(dbURL, "://"); i >= 0 {
		rest := dbURL[i+3:]
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if colon := strings.Index(rest[:at], ":"); colon >= 0 && colon+1 < at {
				out = append(out, rest[colon+1:at])
			}
		}
	}
	if i := strings.Index(dbURL, "password="); i >= 0 {
		v := dbURL[i+len("password="):]
		if end := strings.IndexAny(v, "&# "); end >= 0 {
			v = v[:end]
		}
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// redactErr keeps the password of dbURL out of err's text.
func redactErr(err error, dbURL string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, secret := range passwords(dbURL) {
		msg = strings.ReplaceAll(msg, secret, "xxxxx")
	}
	if msg == err.Error() {
		return err
	}
	return redacted{msg: msg, err: err}
}

type redacted struct {
	msg string
	err error
}

func (r redacted) Error() string { return r.msg }
func (r redacted) Unwrap() error { return r.err }

// defaultConnectTimeout bounds a connection attempt whose URL sets no connect_timeout.
const defaultConnectTimeout = 15 * time.Second

// migrationLock is the key of the advisory lock migrations hold on PostgreSQL ("jean2mig").
const migrationLock = 0x6a65616e326d6967

// pgCode is the SQLSTATE of a PostgreSQL error, "" for any other error.
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// pgDialect turns the store's statements (SQLite's dialect) into PostgreSQL's. Each text
// is translated once and remembered: the store runs a few hundred distinct statements.
type pgDialect struct {
	mu    sync.Mutex
	cache map[string]string
}

// scalarMax is SQLite's two-argument MAX(column, …), Postgres's GREATEST. The aggregate
// MAX(column) has no comma and is left alone.
var scalarMax = regexp.MustCompile(`\bMAX\(([a-z_][a-z_0-9.]*),`)

func (d *pgDialect) translate(q string) string {
	d.mu.Lock()
	out, ok := d.cache[q]
	d.mu.Unlock()
	if ok {
		return out
	}
	out = scalarMax.ReplaceAllString(rebind(q), "GREATEST($1,")
	d.mu.Lock()
	if len(d.cache) < 10000 { // the store's statements are few; a bound keeps a bug from growing it forever
		d.cache[q] = out
	}
	d.mu.Unlock()
	return out
}

// rebind turns ? (the next parameter) and ?N (parameter N) into $N, outside string
// literals, quoted identifiers and comments.
func rebind(q string) string {
	if !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 16)
	next := 0
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(q) && q[j] != c {
				j++
			}
			b.WriteString(q[i:min(j+1, len(q))])
			i = j
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				j = len(q) - i
			}
			b.WriteString(q[i : i+j])
			i += j - 1
		case c == '?':
			j := i + 1
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			if j > i+1 {
				b.WriteString("$" + q[i+1:j])
				i = j - 1
			} else {
				next++
				b.WriteString("$" + strconv.Itoa(next))
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// pgConnector hands database/sql connections that translate statements.
type pgConnector struct {
	inner driver.Connector
	tr    *pgDialect
}

func (c pgConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &pgConn{inner: conn.(*stdlib.Conn), tr: c.tr}, nil
}

func (c pgConnector) Driver() driver.Driver { return c.inner.Driver() }

// pgConn is pgx's database/sql connection with every statement's text translated.
type pgConn struct {
	inner *stdlib.Conn
	tr    *pgDialect
}

func (c *pgConn) Prepare(q string) (driver.Stmt, error) { return c.inner.Prepare(c.tr.translate(q)) }
func (c *pgConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	return c.inner.PrepareContext(ctx, c.tr.translate(q))
}
func (c *pgConn) Close() error              { return c.inner.Close() }
func (c *pgConn) Begin() (driver.Tx, error) { return c.inner.Begin() } //nolint:staticcheck // driver.Conn needs it
func (c *pgConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.inner.BeginTx(ctx, opts)
}
func (c *pgConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	return c.inner.ExecContext(ctx, c.tr.translate(q), args)
}
func (c *pgConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	return c.inner.QueryContext(ctx, c.tr.translate(q), args)
}
func (c *pgConn) Ping(ctx context.Context) error { return c.inner.Ping(ctx) }

// CheckNamedValue stores a bool as 1 or 0, as SQLite does: the schema's flags are integers.
// And a string Postgres's text cannot hold (a NUL character, bytes that are not UTF-8:
// a model or a tool can produce both) is stored with U+FFFD in their place, where SQLite
// keeps it as given: the write of a turn must not fail on a character.
func (c *pgConn) CheckNamedValue(nv *driver.NamedValue) error {
	switch v := nv.Value.(type) {
	case bool:
		nv.Value = int64(0)
		if v {
			nv.Value = int64(1)
		}
	case string:
		nv.Value = pgText(v)
	}
	return c.inner.CheckNamedValue(nv)
}

// pgText is s with NUL characters and invalid UTF-8 replaced by U+FFFD.
func pgText(s string) string {
	if utf8.ValidString(s) && !strings.Contains(s, "\x00") {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}
func (c *pgConn) ResetSession(ctx context.Context) error { return c.inner.ResetSession(ctx) }

package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Fault says why err is the database failing to serve a call (it is down, restarting, busy,
// or its disk is full) rather than a call it refused, and "" when it is not. The server
// answers such errors 503 and clients retry them: they say nothing about the request.
//
// It goes by the errors' types and codes (pgx's, database/sql's, SQLite's), not their
// words.
func Fault(err error) string {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return ""
	}
	if reason := pgFault(err); reason != "" {
		return reason
	}
	return sqliteFault(err)
}

// pgFault classifies PostgreSQL's and the connection's failures.
func pgFault(err error) string {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return "cannot connect to it"
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "53100": // disk_full
			return "its disk is full"
		case pe.Code == "57P01", pe.Code == "57P02": // admin_shutdown, crash_shutdown
			return "it is shutting down"
		case pe.Code == "57P03": // cannot_connect_now: starting or in recovery
			return "it is starting up"
		case len(pe.Code) == 5 && pe.Code[:2] == "08": // connection_exception
			return "the connection to it failed"
		case len(pe.Code) == 5 && pe.Code[:2] == "53": // insufficient_resources
			return "it is out of resources"
		}
		return ""
	}
	// pgconn's own failures on a connection (a read or write that failed, a connection
	// closed under a call) are the errors that say whether the call can be retried.
	var retryable interface{ SafeToRetry() bool }
	if errors.As(err, &retryable) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) {
		return "the connection to it was lost"
	}
	return ""
}

// sqliteFault classifies SQLite's failures that are the file's or the disk's, not the
// statement's.
func sqliteFault(err error) string {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return ""
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return "it is busy (locked by another writer)"
	case sqlite3.SQLITE_FULL:
		return "its disk is full"
	case sqlite3.SQLITE_IOERR:
		return "a disk I/O error"
	case sqlite3.SQLITE_CANTOPEN:
		return "its file cannot be opened"
	case sqlite3.SQLITE_READONLY:
		return "its file is read-only"
	}
	return ""
}

// diskFullFloor is the free space under which a disk I/O error is taken for a full disk:
// SQLite reports a full disk as SQLITE_FULL only sometimes; growing its shared-memory file
// there fails as SQLITE_IOERR_SHMSIZE ("disk I/O error (4874)"), which names nothing.
const diskFullFloor = 64 << 10

// explainFull adds syscall.ENOSPC to a SQLite I/O or full-disk error when the disk holding
// path has (almost) no space left, so the error names the full disk.
func explainFull(path string, err error) error {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	if code := se.Code() & 0xff; code != sqlite3.SQLITE_IOERR && code != sqlite3.SQLITE_FULL {
		return err
	}
	dir := filepath.Dir(path)
	free, ok := freeBytes(dir)
	if !ok || free >= diskFullFloor {
		return err
	}
	return fmt.Errorf("%w: the disk holding %s is full (%d bytes free): %w", err, dir, free, syscall.ENOSPC)
}

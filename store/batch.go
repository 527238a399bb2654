package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Tx is one write transaction of Batch: its writes commit together, or none of them does.
// It is valid only while the function given to Batch runs, and only on that goroutine.
type Tx struct {
	db *DB
	tx *sql.Tx
	// stmts and events are this transaction's handles of the prepared statements, made
	// on first use.
	stmts  [numWriteStmts]*sql.Stmt
	events [maxEventRows]*sql.Stmt
	// touched holds the sessions whose updated_at is to move (to the time given) because a
	// message was added: done with the batch's event numbering for the session, or before
	// the commit.
	touched map[string]int64
}

// touch makes the session's updated_at move to t (at least) with this batch.
func (tx *Tx) touch(sessionID string, t int64) {
	if tx.touched == nil {
		tx.touched = map[string]int64{}
	}
	tx.touched[sessionID] = max(tx.touched[sessionID], t)
}

// flushTouches moves the updated_at of the sessions touched and not numbered yet.
func (tx *Tx) flushTouches(ctx context.Context) error {
	for id, t := range tx.touched {
		if _, err := tx.stmt(ctx, stmtTouchSession).ExecContext(ctx, t, id); err != nil {
			return fmt.Errorf("move the time of session %s: %w", id, err)
		}
	}
	tx.touched = nil
	return nil
}

// Batch runs fn in one write transaction and commits what it wrote when fn returns nil;
// when fn returns an error (or panics), nothing it wrote is kept and its error is returned
// as is.
//
// A commit is the price of a write, much more than the statement itself: an agent's round
// that stores its answer, the answer's parts and the events that tell clients about them in
// one batch pays it once. Writes of other goroutines wait while fn runs (there is one
// writer), so fn should only write: no network, no waiting on people or tools.
func (db *DB) Batch(ctx context.Context, fn func(*Tx) error) error {
	return db.batch(ctx, fn)
}

func (db *DB) batch(ctx context.Context, fn func(*Tx) error) (err error) {
	stx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return &batchError{fmt.Errorf("begin a write: %w", err)}
	}
	done := false
	defer func() {
		if !done {
			// fn failed or panicked: never leave the one writer connection inside a
			// transaction.
			_ = stx.Rollback()
		}
	}()
	tx := &Tx{db: db, tx: stx}
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.flushTouches(ctx); err != nil {
		return err
	}
	done = true
	if err := stx.Commit(); err != nil {
		return &batchError{fmt.Errorf("commit: %w", err)}
	}
	db.committed()
	return nil
}

// batchError is a failure of the transaction itself (begin or commit), not of one of its
// writes, whose errors already say what failed.
type batchError struct{ err error }

func (e *batchError) Error() string { return e.err.Error() }
func (e *batchError) Unwrap() error { return e.err }

// wrapBatch names the write a failed begin or commit was for; a write's own error is
// returned as it is.
func wrapBatch(err error, format string, args ...any) error {
	var be *batchError
	if errors.As(err, &be) {
		return fmt.Errorf(format+": %w", append(args, err)...)
	}
	return err
}

// insertEvents returns the prepared INSERT of n events (1 ≤ n ≤ maxEventRows) bound to
// this transaction.
func (tx *Tx) insertEvents(ctx context.Context, n int) *sql.Stmt {
	if s := tx.events[n-1]; s != nil {
		return s
	}
	s := tx.tx.StmtContext(ctx, tx.db.stmts.events[n-1])
	tx.events[n-1] = s
	return s
}

// stmt returns the prepared statement id bound to this transaction.
func (tx *Tx) stmt(ctx context.Context, id stmtID) *sql.Stmt {
	if s := tx.stmts[id]; s != nil {
		return s
	}
	s := tx.tx.StmtContext(ctx, tx.db.stmts.write[id])
	tx.stmts[id] = s
	return s
}

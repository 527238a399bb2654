package store

import (
	"context"
	"database/sql"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Checkpoints copy what the write-ahead log holds back into the database file, which lets
// the log start over instead of growing. SQLite runs one inside the commit that crosses
// 1000 pages of log, and that commit then waits for the copy and two fsyncs (10 ms and more
// on a busy disk, every few dozen agent rounds). The writer here never checkpoints: a
// goroutine of the DB does, on a connection of its own, soon after commits, in PASSIVE
// mode, which never blocks a writer or a reader.
//
// The log starts over only when a write begins while everything in it is copied, which
// writes that never pause prevent; so once the log holds restartAfterPages, a RESTART
// checkpoint follows the PASSIVE one, on the writer's connection, between two writes: it
// copies the few pages written since the PASSIVE one and makes the next write start the
// log over (the copy of the bulk of the log went before, without holding anyone).
const (
	// checkpointEvery is how long commits may gather in the log before a checkpoint.
	checkpointEvery = 250 * time.Millisecond
	// checkpointAfter commits, a checkpoint starts at once, so the log stays small under
	// heavy writing.
	checkpointAfter = 128
	// restartAfterPages of log (4 MiB of 4 KiB pages) make the log start over.
	restartAfterPages = 1000
	// restartWaitMillis is how long a RESTART checkpoint may wait for readers, holding
	// writes meanwhile.
	restartWaitMillis = 100
	// walSizeLimit is what the log file is cut back to when it starts over after growing
	// past it (journal_size_limit).
	walSizeLimit = 16 << 20
)

// checkpointer runs the DB's checkpoints; see the constants above.
type checkpointer struct {
	conn    *sql.DB       // the checkpointer's own connection
	writer  *sql.DB       // the DB's writer
	commits atomic.Int64  // commits so far
	wake    chan struct{} // a checkpoint is due (checkpointAfter commits)
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

func newCheckpointer(conn, writer *sql.DB) *checkpointer {
	c := &checkpointer{conn: conn, writer: writer, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c
}

// committed counts a commit of the writer.
func (c *checkpointer) committed() {
	if c.commits.Add(1)%checkpointAfter == 0 {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

func (c *checkpointer) run() {
	defer close(c.done)
	tick := time.NewTicker(checkpointEvery)
	defer tick.Stop()
	var done int64 // commits up to the last checkpoint
	for {
		select {
		case <-c.stop:
			return
		case <-tick.C:
		case <-c.wake:
		}
		n := c.commits.Load()
		if n == done {
			continue
		}
		// A failed checkpoint (the disk is full, the file is gone) leaves the log as it
		// is; the next tick tries again, and nothing is lost meanwhile.
		if c.checkpoint() == nil {
			done = n
		}
	}
}

func (c *checkpointer) checkpoint() error {
	ctx := context.Background()
	var busy, logPages, copied int
	if err := c.conn.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &logPages, &copied); err != nil {
		return err
	}
	if logPages < restartAfterPages {
		return nil
	}
	// On the writer's own connection: it runs between two writes, never starved by them
	// (from another connection it waits for a pause in writing that may not come). It
	// also waits for readers still on the log's old pages; writes wait meanwhile, so only
	// briefly: a RESTART that cannot finish soon is left to the next round.
	conn, err := c.writer.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA busy_timeout = `+strconv.Itoa(restartWaitMillis)); err != nil {
		return err
	}
	_, err = conn.ExecContext(ctx, `PRAGMA wal_checkpoint(RESTART)`)
	if _, e := conn.ExecContext(ctx, `PRAGMA busy_timeout = `+strconv.Itoa(busyTimeoutMillis)); e != nil && err == nil {
		err = e
	}
	return err
}

// close stops the goroutine and waits for it; closing again does nothing.
func (c *checkpointer) close() {
	c.once.Do(func() { close(c.stop) })
	<-c.done
}

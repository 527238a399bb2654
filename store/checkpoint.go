package store

import (
	"context"
	"database/sql"
	"errors"
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
//
// The goroutine can fall behind: on a loaded machine it may not run for a second while
// the writer commits thousands of times, and the log then grows as long as writes come
// (hundreds of MB on a busy server). So the writer has a bound it cannot pass: once
// forceAfter commits went by since the last checkpoint that left the log small, the
// goroutine that commits next runs the checkpoint itself before it returns (its write is
// committed; it is the next writes that wait). That checkpoint is bounded in time
// (forcedTimeout, and restartWaitMillis for readers); when it fails, writes go on and the
// next try comes forceAfter commits later, so a broken checkpoint never stalls writing.
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
	// forceAfter commits without a checkpoint that left the log small, the writer runs
	// one itself: the goroutine, when it keeps up, settles the log every checkpointAfter
	// commits, so it has one round of margin; and forceAfter commits of an agent's events
	// (about 6 pages each) make 6 MB of log, well under walSizeLimit. A bound in commits,
	// not pages: the writer has no cheap way to learn the log's size.
	forceAfter = 2 * checkpointAfter
	// forcedTimeout bounds a checkpoint the writer runs (copying a large log on a slow
	// disk, or a stuck one); past it the writer goes on and tries again later.
	forcedTimeout = 2 * time.Second
)

// checkpointer runs the DB's checkpoints; see the constants above.
type checkpointer struct {
	conn    *sql.DB       // the checkpointer's own connection
	writer  *sql.DB       // the DB's writer
	commits atomic.Int64  // commits so far
	settled atomic.Int64  // commits up to the last checkpoint that left the log small
	nextTry atomic.Int64  // after a failed forced checkpoint, the commit of the next try
	forced  atomic.Int64  // checkpoints the writer ran itself (tests and figures)
	tries   atomic.Int64  // checkpoints the writer tried to run, failed ones too
	mu      sync.Mutex    // one checkpoint at a time: the goroutine's or a forced one
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

// committed counts a commit of the writer. The caller must have let go of the writer's
// connection (the commit is over): a forced checkpoint takes it for its RESTART.
func (c *checkpointer) committed() {
	n := c.commits.Add(1)
	if n%checkpointAfter == 0 {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	if n-c.settled.Load() >= forceAfter && n >= c.nextTry.Load() {
		c.force(n)
	}
}

// force runs a checkpoint in the writing goroutine, the goroutine of the DB having fallen
// forceAfter commits behind.
func (c *checkpointer) force(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Another writer, or the goroutine, may have settled the log while this one waited,
	// or failed to (writers that waited behind a failed try do not each try again).
	if n-c.settled.Load() < forceAfter || n < c.nextTry.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), forcedTimeout)
	defer cancel()
	c.tries.Add(1)
	start := c.commits.Load()
	if err := c.checkpoint(ctx); err != nil {
		// Nothing is lost (the log keeps it all); writes go on, and the next try waits
		// for forceAfter more commits so that a broken checkpoint costs writes little.
		c.nextTry.Store(n + forceAfter)
		return
	}
	c.forced.Add(1)
	c.settled.Store(start)
}

func (c *checkpointer) run() {
	defer close(c.done)
	tick := time.NewTicker(checkpointEvery)
	defer tick.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-tick.C:
		case <-c.wake:
		}
		c.background()
	}
}

// background runs a checkpoint of the goroutine, if commits came since the last one.
func (c *checkpointer) background() {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.commits.Load()
	if n == c.settled.Load() {
		return
	}
	// A failed checkpoint (the disk is full, the file is gone) leaves the log as it is;
	// the next tick tries again, and nothing is lost meanwhile.
	if c.checkpoint(context.Background()) == nil {
		c.settled.Store(n)
	}
}

// checkpoint copies the log into the database file (PASSIVE), and makes it start over
// (RESTART) once it holds restartAfterPages. Its caller holds c.mu.
func (c *checkpointer) checkpoint(ctx context.Context) error {
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
	err = conn.QueryRowContext(ctx, `PRAGMA wal_checkpoint(RESTART)`).Scan(&busy, &logPages, &copied)
	if err == nil && busy != 0 {
		// Readers held the log's old pages past restartWaitMillis: it did not start over.
		err = errCheckpointBusy
	}
	// Put the writer's busy timeout back even when ctx is over, or later writes would
	// give up on a lock after restartWaitMillis.
	if _, e := conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA busy_timeout = `+strconv.Itoa(busyTimeoutMillis)); e != nil && err == nil {
		err = e
	}
	return err
}

// errCheckpointBusy says a RESTART checkpoint gave up waiting for readers.
var errCheckpointBusy = errors.New("checkpoint: readers held the log")

// close stops the goroutine and waits for it; closing again does nothing.
func (c *checkpointer) close() {
	c.once.Do(func() { close(c.stop) })
	<-c.done
}

// Package cluster lets several jean2 serve instances share one database (docs/deploy.md):
// each instance has an id; a turn holds its session's lease, renewed by a heartbeat, so
// only one instance runs a session's turn; a reaper seals the turns of instances that died
// (their lease expired); a feed brings the events other instances write to this instance's
// subscribers; a command channel carries Stop and ask answers to the instance running the
// turn. The database is the only thing shared: every mechanism is a table (migration 0011)
// read by polling, which a Postgres LISTEN connection wakes early. A single instance uses
// none of it.
package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/jean2/jean2/store"
)

// Defaults of Options.
const (
	DefaultLeaseTTL = 30 * time.Second
	DefaultPoll     = 100 * time.Millisecond
	// DefaultNotifiedPoll is the poll of an instance whose Notifier wakes it: the poll only
	// covers notifications lost with a connection.
	DefaultNotifiedPoll = time.Second
)

// Turns is what the cluster needs of the harness (*harness.Harness).
type Turns interface {
	Stop(sessionID string) bool
	RecoverSession(ctx context.Context, sessionID string) error
}

// Events is what the cluster needs of the hub (*hub.Hub).
type Events interface {
	Subscribed() []string
	Poke(sessionID string)
	Answer(ctx context.Context, sessionID, askID string, answer json.RawMessage) error
}

// Notifier wakes the node when another instance wrote (Postgres LISTEN/NOTIFY): Listen
// calls events with a session whose log grew and commands when a command came for this
// instance, until ctx ends or the connection fails (Listen then returns, and is called
// again after a pause; the poll covers the gap).
type Notifier interface {
	Listen(ctx context.Context, instanceID string, events func(sessionID string), commands func()) error
}

// Options configure a Node. Store is required.
type Options struct {
	Store *store.DB
	// Instance is this instance's id; "" makes one (NewInstanceID).
	Instance string
	// Previous is the id of this instance's previous run (the same JEAN2_HOME), if any: its
	// leases are not another live instance's but turns that run left, sealed at start as a
	// lone server seals its own.
	Previous string
	// LeaseTTL is how long a turn's lease lasts unrenewed (DefaultLeaseTTL when 0): a dead
	// instance's turn is sealed between LeaseTTL and LeaseTTL*4/3 after its last renewal.
	LeaseTTL time.Duration
	// Poll is how often the feed and the command channel read the store (DefaultPoll, or
	// DefaultNotifiedPoll with a Notifier, when 0).
	Poll     time.Duration
	Notifier Notifier
	// ServerEvents, when set, is handed the events of the server's own log ("") that were
	// appended since the node started, by any instance (its own too), in order: the server
	// applies there what another instance changed (settings.changed).
	ServerEvents func(ctx context.Context, evs []store.Event)
	// ServerAfter, when set, is the last event of the server log that ServerEvents need
	// not be handed: the caller read it before it loaded what those events change (the
	// settings, the providers, the grants), so that nothing appended in between is
	// missed. Unset, the feed follows the server log from its last event when it starts.
	ServerAfter *int64
	Logger      *slog.Logger
}

// Node is this instance's part of the cluster. Make it with New before the harness (which
// takes it as its harness.Leaser), Start it once the harness and the hub exist, Close it
// after the harness.
type Node struct {
	db       *store.DB
	id       string
	previous string
	ttl      time.Duration
	poll     time.Duration
	notifier Notifier
	log      *slog.Logger

	turns        Turns
	events       Events
	serverEvents func(ctx context.Context, evs []store.Event)
	serverAfter  *int64

	wakeEvents   chan string   // sessions a notification named
	wakeCommands chan struct{} // a command came

	mu   sync.Mutex
	held map[string]*lease // the leases this instance's harness holds, by session

	// watchMu orders the records of the sessions watched here (feed.go).
	watchMu sync.Mutex

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewInstanceID returns host:pid:random, unique across restarts and hosts.
func NewInstanceID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "host"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// New makes a node; it does nothing until Start, but its leases work at once (the harness
// takes them while it seals at start).
func New(opts Options) (*Node, error) {
	if opts.Store == nil {
		return nil, errors.New("cluster: Options.Store is required")
	}
	if opts.LeaseTTL < 0 || opts.Poll < 0 {
		return nil, fmt.Errorf("cluster: LeaseTTL (%s) and Poll (%s) may not be negative", opts.LeaseTTL, opts.Poll)
	}
	if opts.Instance == "" {
		opts.Instance = NewInstanceID()
	}
	if opts.LeaseTTL == 0 {
		opts.LeaseTTL = DefaultLeaseTTL
	}
	if opts.Poll == 0 {
		opts.Poll = DefaultPoll
		if opts.Notifier != nil {
			opts.Poll = DefaultNotifiedPoll
		}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Node{
		db: opts.Store, id: opts.Instance, previous: opts.Previous, ttl: opts.LeaseTTL, poll: opts.Poll, notifier: opts.Notifier, serverEvents: opts.ServerEvents, serverAfter: opts.ServerAfter,
		log:          opts.Logger.With("instance", opts.Instance),
		wakeEvents:   make(chan string, 1024),
		wakeCommands: make(chan struct{}, 1),
		held:         map[string]*lease{},
	}, nil
}

// ID is this instance's id.
func (n *Node) ID() string { return n.id }

// LeaseTTL is how long a lease lasts unrenewed.
func (n *Node) LeaseTTL() time.Duration { return n.ttl }

// Start runs the feed, the command channel, the heartbeat and the reaper until Close.
func (n *Node) Start(turns Turns, events Events) {
	n.turns, n.events = turns, events
	if n.previous != "" && n.previous != n.id {
		// The harness sealed the previous run's turns as it started: their leases go.
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if released, err := n.db.ReleaseLeasesOf(rctx, n.previous); err != nil {
			n.log.Warn("release the leases of this instance's previous run", "previous", n.previous, "error", err)
		} else if released > 0 {
			n.log.Info("released the leases of this instance's previous run", "previous", n.previous, "leases", released)
		}
		cancel()
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	n.log.Info("cluster node started", "leaseTTL", n.ttl, "poll", n.poll, "notified", n.notifier != nil)
	n.run(ctx, n.feedLoop)
	n.run(ctx, n.heartbeatLoop)
	n.run(ctx, n.reaperLoop)
	if n.notifier != nil {
		n.run(ctx, n.listenLoop)
	}
}

func (n *Node) run(ctx context.Context, f func(context.Context)) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f(ctx)
	}()
}

// Close stops the node's loops. Leases still held are left to expire (Close comes after the
// harness's, which released them).
func (n *Node) Close() {
	if n.cancel != nil {
		n.cancel()
	}
	n.wg.Wait()
}

// listenLoop keeps the notifier listening, again after each failure.
func (n *Node) listenLoop(ctx context.Context) {
	for ctx.Err() == nil {
		err := n.notifier.Listen(ctx, n.id,
			func(sessionID string) {
				select {
				case n.wakeEvents <- sessionID:
				default: // full: the poll reads every watched session anyway
				}
			},
			func() {
				select {
				case n.wakeCommands <- struct{}{}:
				default:
				}
			})
		if ctx.Err() != nil {
			return
		}
		n.log.Warn("cluster notifications stopped; polling every "+n.poll.String()+" until they are back", "error", err)
		sleep(ctx, time.Second)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

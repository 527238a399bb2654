package hub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/tool"
)

// Defaults of Options' zero fields.
const (
	DefaultAskTimeout       = 5 * time.Minute
	DefaultSubscriberBuffer = 1024
	DefaultMaxPendingAsks   = 64
)

var (
	// ErrClosed ends subscriptions and refuses calls once the hub or the subscription is
	// closed.
	ErrClosed = errors.New("hub closed")
	// ErrSlowSubscriber ends a subscription whose reader fell more than its buffer behind
	// the live events; the client reconnects with the last seq it saw and catches up from the
	// store.
	ErrSlowSubscriber = errors.New("subscriber fell too far behind the live events; subscribe again after the last seq received")
	// ErrNoSuchAsk is returned by Answer for an ask that is not pending in the session: never
	// asked, or already answered, timed out or cancelled.
	ErrNoSuchAsk = errors.New("no such pending ask")
	// ErrTooManyAsks refuses an ask when the session already has MaxPendingAsks waiting.
	ErrTooManyAsks = errors.New("too many pending asks")
	// ErrAskTimeout is the tool's error when no one answered within the ask timeout.
	ErrAskTimeout = errors.New("no answer came within the ask timeout")
)

// Options configure a Hub. Store is required.
type Options struct {
	Store *store.DB
	// AskTimeout is how long an ask waits for a person; 0 means DefaultAskTimeout.
	AskTimeout time.Duration
	// Unattended decides the asks of a session no client is attached to; nil (or a nil
	// result) means ask.Policy{}, which denies permissions and refuses other asks.
	Unattended func(sessionID string) tool.Asker
	Logger     *slog.Logger

	// SubscriberBuffer is how many live events a subscription may hold unread before it
	// ends with ErrSlowSubscriber; 0 means DefaultSubscriberBuffer.
	SubscriberBuffer int
	// MaxPendingAsks caps the asks waiting at once in one session; 0 means
	// DefaultMaxPendingAsks.
	MaxPendingAsks int
	// Published, when set, is told of the events of every log once they are stored and
	// handed to the subscribers (the server derives a session's live status from them). It
	// runs under the log's publish lock: it must be quick and must not publish on the same
	// log.
	Published func(sessionID string, evs []store.Event)
	// Unwatched, when set, is told of the events of a session's log that no live
	// subscription of this hub was handed (nobody watched them arrive; the server's push
	// notifications). Decided from the same snapshot of subscribers the events were offered
	// to, so a client that saw an event and left at once still counts as watching. Same
	// rules as Published: quick, and no publishing on the same log.
	Unwatched func(sessionID string, evs []store.Event)
	// AttachedElsewhere, when set, says whether a client of the session is attached to
	// another instance sharing the database (cluster.Node): an ask then waits for a person
	// instead of going to Unattended.
	AttachedElsewhere func(sessionID string) bool
}

// Hub fans a session's event log out to its subscribers and holds the asks waiting for a
// person. Safe for concurrent use; Close ends everything it started.
type Hub struct {
	store      *store.DB
	askTimeout atomic.Int64 // a time.Duration; SetAskTimeout changes it while the hub runs
	unattended func(sessionID string) tool.Asker
	log        *slog.Logger
	subBuffer  int
	maxAsks    int
	published  func(sessionID string, evs []store.Event)
	unwatched  func(sessionID string, evs []store.Event)
	elsewhere  func(sessionID string) bool

	mu       sync.Mutex
	sessions map[string]*session // sessions with subscribers, asks or a Publish in flight
	closing  bool                // no new subscriptions or asks
	closed   bool                // no more publishing either

	subs sync.WaitGroup // the subscriptions' pump goroutines
}

// session is the hub's state of one session's log. It lives while something uses it (users
// counts them) so the map does not grow with every session the server ever saw.
type session struct {
	id    string
	users int // guarded by Hub.mu

	// pub serializes Publish calls of the session across append and fan-out, so every
	// subscriber receives live events in seq order.
	pub sync.Mutex

	mu   sync.Mutex
	subs map[*Subscription]struct{}
	asks map[string]*pendingAsk
}

func newSession(id string) *session {
	return &session{id: id, subs: map[*Subscription]struct{}{}, asks: map[string]*pendingAsk{}}
}

// New returns a hub over opts.Store.
func New(opts Options) *Hub {
	h := &Hub{
		store:      opts.Store,
		unattended: opts.Unattended,
		log:        opts.Logger,
		subBuffer:  opts.SubscriberBuffer,
		published:  opts.Published,
		unwatched:  opts.Unwatched,
		elsewhere:  opts.AttachedElsewhere,
		maxAsks:    opts.MaxPendingAsks,
		sessions:   map[string]*session{},
	}
	h.SetAskTimeout(opts.AskTimeout)
	if h.subBuffer <= 0 {
		h.subBuffer = DefaultSubscriberBuffer
	}
	if h.maxAsks <= 0 {
		h.maxAsks = DefaultMaxPendingAsks
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	return h
}

// SetAskTimeout changes how long asks made from now on wait for a person (0 or less means
// DefaultAskTimeout); asks already pending keep the expiry they were announced with.
func (h *Hub) SetAskTimeout(d time.Duration) {
	if d <= 0 {
		d = DefaultAskTimeout
	}
	h.askTimeout.Store(int64(d))
}

var errNoStore = errors.New("hub has no store: set Options.Store")

// acquire returns the session's state, made on first use, and counts the caller as a user
// until it calls release.
func (h *Hub) acquire(sessionID string) *session {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sessions[sessionID]
	if s == nil {
		s = newSession(sessionID)
		h.sessions[sessionID] = s
	}
	s.users++
	return s
}

func (h *Hub) release(s *session) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s.users--
	if s.users == 0 && h.sessions[s.id] == s {
		delete(h.sessions, s.id)
	}
}

// lookup returns the session's state when something uses it, without counting a user.
// subscribers is a snapshot of the session's subscriptions, to offer to outside its lock.
func (s *session) subscribers() []*Subscription {
	s.mu.Lock()
	defer s.mu.Unlock()
	subs := make([]*Subscription, 0, len(s.subs))
	for sub := range s.subs {
		subs = append(subs, sub)
	}
	return subs
}

func (h *Hub) lookup(sessionID string) *session {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions[sessionID]
}

// Publish appends events to the session's log in one transaction and hands them to every
// live subscription of the session. Events of concurrent Publish calls reach each
// subscriber in seq order, without gaps; a subscriber too slow to keep up is ended rather
// than waited for.
func (h *Hub) Publish(ctx context.Context, sessionID string, evs ...store.NewEvent) ([]store.Event, error) {
	if len(evs) == 0 {
		if err := h.usable(sessionID); err != nil {
			return nil, err
		}
		return []store.Event{}, nil
	}
	return h.publish(ctx, sessionID, func() ([]store.Event, error) {
		return h.store.AppendEvents(ctx, sessionID, evs...)
	})
}

// PublishWith runs write in one store transaction together with the append of the events
// it returns, then fans them out like Publish (under the same per-session lock, so live
// order is seq order). A turn's writes and the events that announce them so cost one
// commit, and no client can hear of a write that was not stored. When write or the append
// fails, nothing is stored or sent and the error is returned; a closed hub returns
// ErrClosed without running write.
func (h *Hub) PublishWith(ctx context.Context, sessionID string, write func(*store.Tx) ([]store.NewEvent, error)) ([]store.Event, error) {
	return h.publish(ctx, sessionID, func() ([]store.Event, error) {
		var out []store.Event
		err := h.store.Batch(ctx, func(tx *store.Tx) error {
			evs, err := write(tx)
			if err != nil || len(evs) == 0 {
				return err
			}
			out, err = tx.AppendEvents(ctx, sessionID, evs...)
			return err
		})
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = []store.Event{}
		}
		return out, nil
	})
}

// usable says why nothing can be published now, or nil.
func (h *Hub) usable(sessionID string) error {
	if h.store == nil {
		return errNoStore
	}
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return fmt.Errorf("publish to session %q: %w", sessionID, ErrClosed)
	}
	return nil
}

// publish stores events with appendEvents under the session's publish lock, then fans them
// out.
func (h *Hub) publish(ctx context.Context, sessionID string, appendEvents func() ([]store.Event, error)) ([]store.Event, error) {
	if err := h.usable(sessionID); err != nil {
		return nil, err
	}
	s := h.acquire(sessionID)
	defer h.release(s)
	s.pub.Lock()
	defer s.pub.Unlock()
	out, err := appendEvents()
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return out, nil
	}
	// A subscription registered after this snapshot started its replay after the append
	// committed, so it reads these events from the store instead.
	subs := s.subscribers()
	for _, sub := range subs {
		sub.offer(out)
	}
	if h.published != nil {
		h.published(sessionID, out)
	}
	if h.unwatched != nil && len(subs) == 0 {
		h.unwatched(sessionID, out)
	}
	return out, nil
}

// Attached is the number of live subscriptions of the session: the clients attached to it.
func (h *Hub) Attached(sessionID string) int {
	s := h.lookup(sessionID)
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.subs)
}

// Close cancels every pending ask (ask.resolved, outcome cancelled; the tools get
// ErrClosed), ends every subscription with ErrClosed and waits for them. Publish and
// Subscribe fail afterwards.
func (h *Hub) Close() {
	h.mu.Lock()
	if h.closing {
		h.mu.Unlock()
		h.subs.Wait()
		return
	}
	h.closing = true
	var asks []*pendingAsk
	for _, s := range h.sessions {
		s.mu.Lock()
		for _, p := range s.asks {
			asks = append(asks, p)
		}
		s.mu.Unlock()
	}
	h.mu.Unlock()

	for _, p := range asks {
		h.resolve(context.Background(), p, OutcomeCancelled, nil, fmt.Errorf("%s ask %q of tool %s: %w", p.Ask.Type, p.Ask.Question, p.Tool, ErrClosed))
	}

	h.mu.Lock()
	h.closed = true
	var subs []*Subscription
	for _, s := range h.sessions {
		s.mu.Lock()
		for sub := range s.subs {
			subs = append(subs, sub)
		}
		s.mu.Unlock()
	}
	h.mu.Unlock()
	for _, sub := range subs {
		sub.end(ErrClosed)
	}
	h.subs.Wait()
}

// Subscribed lists the sessions with a live subscription here ("" is the server's log):
// those whose events other instances write must be brought to this one (Poke).
func (h *Hub) Subscribed() []string {
	h.mu.Lock()
	ss := make([]*session, 0, len(h.sessions))
	for _, s := range h.sessions {
		ss = append(ss, s)
	}
	h.mu.Unlock()
	var out []string
	for _, s := range ss {
		s.mu.Lock()
		n := len(s.subs)
		s.mu.Unlock()
		if n > 0 {
			out = append(out, s.id)
		}
	}
	return out
}

// Poke tells the session's subscriptions that its log may hold events this hub did not
// publish (another instance wrote them): each reads the store after the last event it sent,
// so nothing is missed or sent twice however pokes and publishes interleave.
func (h *Hub) Poke(sessionID string) {
	s := h.lookup(sessionID)
	if s == nil {
		return
	}
	for _, sub := range s.subscribers() {
		select {
		case sub.poke <- struct{}{}:
		default: // one is waiting already; it reads everything there is then
		}
	}
}

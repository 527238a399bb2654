package harness

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/tool"
	"github.com/jean2/jean2/undo"
)

// Event types the harness publishes on a session's log.
const (
	EventTurnStarted    = "turn.started"
	EventMessageCreated = "message.created"
	EventMessageUpdated = "message.updated"
	EventPartCreated    = "part.created"
	EventPartDelta      = "part.delta"
	EventPartUpdated    = "part.updated"
	EventToolProgress   = "tool.progress"
	EventTurnFinished   = "turn.finished"
	EventRestoreDone    = "restore.done"
)

// Reasons a turn finished, as turn.finished says them.
const (
	ReasonDone        = "done"        // the model answered without calling a tool
	ReasonStopped     = "stopped"     // Stop
	ReasonBudget      = "budget"      // the work budget was spent
	ReasonCeiling     = "ceiling"     // the hard ceiling of rounds was reached
	ReasonError       = "error"       // the model failed, or the harness could not go on
	ReasonInterrupted = "interrupted" // the server stopped (shut down, or killed: sealed at the next start)
)

// TurnStarted is the payload of turn.started.
type TurnStarted struct {
	TurnID        string `json:"turnId"`
	UserMessageID string `json:"userMessageId"`
}

// MessageEvent is the payload of message.created (parts included) and message.updated
// (parts omitted).
type MessageEvent struct {
	Message messageJSON `json:"message"`
}

// messageJSON is a store.Message whose parts may be left out of the JSON.
type messageJSON struct {
	store.Message
	Parts []store.Part `json:"parts,omitempty"`
}

// PartEvent is the payload of part.created and part.updated.
type PartEvent struct {
	Part store.Part `json:"part"`
}

// PartDelta is the payload of part.delta: text appended to a text part.
type PartDelta struct {
	MessageID string `json:"messageId"`
	PartID    string `json:"partId"`
	Text      string `json:"text"`
}

// ToolProgress is the payload of tool.progress.
type ToolProgress struct {
	MessageID string        `json:"messageId"`
	PartID    string        `json:"partId"`
	CallID    string        `json:"callId"`
	Progress  tool.Progress `json:"progress"`
}

// TurnFinished is the payload of turn.finished.
type TurnFinished struct {
	TurnID string `json:"turnId"`
	Reason string `json:"reason"`
	Error  string `json:"error,omitempty"`
	// MessageID is the message the turn's ledger is filed under; "" when the turn drew no
	// answer at all.
	MessageID string         `json:"messageId"`
	Rounds    int            `json:"rounds"`
	Changed   Changed        `json:"changed"`
	Usage     provider.Usage `json:"usage"`
}

// Changed is what a turn changed: Files is the number of distinct paths with a successful
// write that reached the disk ("Changed N files"), Paths those paths, Failed the number of
// changes that failed.
type Changed struct {
	Files  int      `json:"files"`
	Failed int      `json:"failed"`
	Paths  []string `json:"paths"`
}

// RestoreDone is the payload of restore.done.
type RestoreDone struct {
	MessageID string      `json:"messageId"`
	Report    undo.Report `json:"report"`
}

// Summarize counts a ledger's changes the way turn.finished reports them.
func Summarize(changes []tool.Change) Changed {
	c := Changed{Paths: []string{}}
	seen := map[string]bool{}
	for _, ch := range changes {
		switch {
		case !ch.OK:
			c.Failed++
		case ch.Disk && !seen[ch.Path]:
			seen[ch.Path] = true
			c.Paths = append(c.Paths, ch.Path)
		}
	}
	c.Files = len(c.Paths)
	return c
}

func newEvent(typ string, payload any) store.NewEvent {
	b, err := json.Marshal(payload)
	if err != nil {
		// Every payload is made of plain values; a failure here is a bug, and a null
		// payload keeps the log's numbering whole.
		b = []byte("null")
	}
	return store.NewEvent{Type: typ, Payload: b}
}

// messageCreated is the event of a new message with its parts. An image part goes without
// its bytes, which the event log would otherwise hold a second time beside the message:
// clients read them from GET /api/sessions/{id}/parts/{partId}/image (or the messages).
func messageCreated(m store.Message) store.NewEvent {
	parts := make([]store.Part, len(m.Parts))
	copy(parts, m.Parts)
	for i := range parts {
		if parts[i].Kind == store.PartImage || parts[i].Kind == store.PartResource {
			parts[i].Data = nil
		}
		parts[i] = withoutToolContent(parts[i])
	}
	return newEvent(EventMessageCreated, MessageEvent{Message: messageJSON{Message: m, Parts: parts}})
}

func messageUpdated(m store.Message) store.NewEvent {
	return newEvent(EventMessageUpdated, MessageEvent{Message: messageJSON{Message: m}})
}

func partCreated(p store.Part) store.NewEvent {
	return newEvent(EventPartCreated, PartEvent{Part: withoutToolContent(p)})
}

func partUpdated(p store.Part) store.NewEvent {
	return newEvent(EventPartUpdated, PartEvent{Part: withoutToolContent(p)})
}

// withoutToolContent is a tool part without the images it keeps for the model
// (store.ToolContentType): people see them in the visualization, and the event log would
// hold them a second time.
func withoutToolContent(p store.Part) store.Part {
	if p.MediaType == store.ToolContentType {
		p.Data = nil
	}
	return p
}

// BatchPublisher is a Publisher that also stores writes together with the events that
// announce them, in one transaction: the write runs inside it, and the events it returns
// are appended to the session's log before the commit and fanned out after it, like
// Publish. When write fails nothing is stored or sent. (*hub.Hub once it has PublishWith.)
type BatchPublisher interface {
	Publisher
	PublishWith(ctx context.Context, sessionID string, write func(*store.Tx) ([]store.NewEvent, error)) ([]store.Event, error)
}

// op is one write of the harness and the events that tell clients about it, built from
// what was stored. An op may run twice (see emitter.commit), so it only sets what it
// stores, never appends to state outside the transaction.
type op func(ctx context.Context, tx *store.Tx) ([]store.NewEvent, error)

// ops are writes waiting to be stored together, in order.
type ops []op

// events adds an op that only announces.
func (o *ops) events(evs ...store.NewEvent) {
	if len(evs) == 0 {
		return
	}
	*o = append(*o, func(context.Context, *store.Tx) ([]store.NewEvent, error) { return evs, nil })
}

func (o *ops) add(f op) { *o = append(*o, f) }

// emitter stores and publishes one session's writes and events in the order they are
// handed over, even when parallel calls hand them over at once. Everything a client is
// told is committed first: a write and its events commit in one transaction when the
// publisher can (BatchPublisher), else the writes commit before the events are published.
type emitter struct {
	db        *store.DB
	pub       Publisher
	sessionID string
	log       *slog.Logger
	// fence, when set, runs first in every transaction: it refuses the writes of a turn
	// whose lease was lost (Lease.Fence).
	fence func(context.Context, *store.Tx) error
	mu    sync.Mutex
	// failed is set once a commit failed: the store may not hold what memory does.
	failed atomic.Bool
}

// emit publishes events that announce no write. A failure is logged: a client that missed
// an event reloads the session.
func (e *emitter) emit(ctx context.Context, evs ...store.NewEvent) {
	if len(evs) == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, err := e.pub.Publish(ctx, e.sessionID, evs...); err != nil {
		e.log.Error("publish events", "session", e.sessionID, "first", evs[0].Type, "count", len(evs), "error", err)
	}
}

// commit stores the writes of o and publishes their events, all in one transaction when
// the publisher allows it. It returns the error of a write that failed (then nothing of o
// is stored, nor published); a failure to publish what was stored is only logged.
func (e *emitter) commit(ctx context.Context, o ops) error {
	if len(o) == 0 {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var writeErr error
	write := func(tx *store.Tx) ([]store.NewEvent, error) {
		if e.fence != nil {
			if err := e.fence(ctx, tx); err != nil {
				writeErr = err
				return nil, err
			}
		}
		var evs []store.NewEvent
		for _, f := range o {
			more, err := f(ctx, tx)
			if err != nil {
				writeErr = err
				return nil, err
			}
			evs = append(evs, more...)
		}
		return evs, nil
	}
	if bp, ok := e.pub.(BatchPublisher); ok {
		_, err := bp.PublishWith(ctx, e.sessionID, write)
		switch {
		case err == nil:
			return nil
		case writeErr != nil:
			e.failed.Store(true)
			return writeErr
		}
		// The publisher failed, not a write (it is closing, say): store the writes on
		// their own below; what cannot be published is logged.
		e.log.Warn("store and publish in one transaction failed; storing, then publishing apart",
			"session", e.sessionID, "error", err)
	}
	var evs []store.NewEvent
	err := e.db.Batch(ctx, func(tx *store.Tx) error {
		var err error
		evs, err = write(tx)
		return err
	})
	if err != nil {
		e.failed.Store(true)
		return err
	}
	if len(evs) > 0 {
		if _, err := e.pub.Publish(ctx, e.sessionID, evs...); err != nil {
			e.log.Error("publish events", "session", e.sessionID, "first", evs[0].Type, "count", len(evs), "error", err)
		}
	}
	return nil
}

package harness

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jean2/jean2/store"
)

// EventQueueChanged announces the session's queue of messages waiting for its turn to end,
// whole, after every change (QueueChanged). The log keeps their text: a queue a restart
// dropped can be read back there.
const EventQueueChanged = "queue.changed"

// Queued is a message waiting for the session's running turn to end.
type Queued struct {
	ID     string `json:"id"`
	Text   string `json:"text"`
	Images int    `json:"images,omitempty"`
	// Resources is how many MCP resources the message carries.
	Resources int       `json:"resources,omitempty"`
	QueuedAt  time.Time `json:"queuedAt"`
	in        Input
}

// QueueChanged is the payload of queue.changed. Error says why the first message could not
// be sent when its turn came (it stays first in the queue).
type QueueChanged struct {
	Items []Queued `json:"items"`
	Error string   `json:"error,omitempty"`
}

// MaxQueued bounds a session's queue.
const MaxQueued = 20

// queues are the sessions' queues, in memory (see EventQueueChanged).
type queues struct {
	mu sync.Mutex
	m  map[string][]Queued
}

// Enqueue sends in now when the session is idle (started is then the turn), else keeps it to
// be sent as the next turn when the running one ends, in the order queued.
func (h *Harness) Enqueue(ctx context.Context, sessionID string, in Input) (q Queued, started *TurnInfo, err error) {
	if err := checkInput(in); err != nil {
		return Queued{}, nil, fmt.Errorf("queue a message in session %s: %w", sessionID, err)
	}
	h.queue.mu.Lock()
	waiting := len(h.queue.m[sessionID]) > 0
	h.queue.mu.Unlock()
	if !waiting {
		info, err := h.Start(ctx, sessionID, in)
		if err == nil {
			return Queued{}, &info, nil
		}
		// A turn another instance runs ends there: nothing here would send the message
		// after it, so the person is told to wait instead.
		if !errors.Is(err, ErrBusy) || errors.Is(err, store.ErrLeased) {
			return Queued{}, nil, err
		}
	}
	q = Queued{ID: store.NewID("q_"), Text: in.Text, Images: len(in.Images), Resources: len(in.Resources), QueuedAt: time.Now().UTC(), in: in}
	h.queue.mu.Lock()
	if len(h.queue.m[sessionID]) >= MaxQueued {
		h.queue.mu.Unlock()
		return Queued{}, nil, fmt.Errorf("%w: session %s has %d messages queued already; wait for its turns or remove one", ErrBadInput, sessionID, MaxQueued)
	}
	if h.queue.m == nil {
		h.queue.m = map[string][]Queued{}
	}
	h.queue.m[sessionID] = append(h.queue.m[sessionID], q)
	items := append([]Queued(nil), h.queue.m[sessionID]...)
	h.queue.mu.Unlock()
	h.emitter(sessionID).emit(context.WithoutCancel(ctx), newEvent(EventQueueChanged, QueueChanged{Items: items}))
	// The turn may have ended between Start's refusal and the append.
	if !h.Running(sessionID) {
		h.sendQueued(sessionID)
	}
	return q, nil, nil
}

// Queue lists the session's queued messages.
func (h *Harness) Queue(sessionID string) []Queued {
	h.queue.mu.Lock()
	defer h.queue.mu.Unlock()
	return append([]Queued{}, h.queue.m[sessionID]...)
}

// Unqueue removes a queued message; false when it is not queued (sent already, or never).
func (h *Harness) Unqueue(ctx context.Context, sessionID, id string) bool {
	h.queue.mu.Lock()
	list := h.queue.m[sessionID]
	found := false
	for i, q := range list {
		if q.ID == id {
			list = append(list[:i:i], list[i+1:]...)
			found = true
			break
		}
	}
	h.setQueueLocked(sessionID, list)
	items := append([]Queued{}, list...)
	h.queue.mu.Unlock()
	if found {
		h.emitter(sessionID).emit(context.WithoutCancel(ctx), newEvent(EventQueueChanged, QueueChanged{Items: items}))
	}
	return found
}

func (h *Harness) setQueueLocked(sessionID string, list []Queued) {
	if len(list) == 0 {
		delete(h.queue.m, sessionID)
		return
	}
	h.queue.m[sessionID] = list
}

// sendQueued starts the session's first queued message as its next turn, once its turn has
// ended. A message that cannot start (no model now, the server closing) stays first and the
// event says why; a session busy again (another client started a turn) keeps its queue for
// that turn's end.
func (h *Harness) sendQueued(sessionID string) {
	// Taken off before it starts: the turn it starts may end, and call this again, before
	// Start returns.
	h.queue.mu.Lock()
	list := h.queue.m[sessionID]
	if len(list) == 0 {
		h.queue.mu.Unlock()
		return
	}
	first := list[0]
	h.setQueueLocked(sessionID, list[1:])
	h.queue.mu.Unlock()
	ctx := context.WithoutCancel(h.base)
	_, err := h.Start(ctx, sessionID, first.in)
	var why string
	if err != nil {
		h.queue.mu.Lock()
		if h.queue.m == nil {
			h.queue.m = map[string][]Queued{}
		}
		h.queue.m[sessionID] = append([]Queued{first}, h.queue.m[sessionID]...)
		h.queue.mu.Unlock()
		if errors.Is(err, ErrBusy) || errors.Is(err, ErrClosed) {
			return
		}
		h.log.Warn("send a queued message", "session", sessionID, "error", err)
		why = fmt.Sprintf("the queued message could not be sent: %v", err)
	}
	h.emitter(sessionID).emit(ctx, newEvent(EventQueueChanged, QueueChanged{Items: h.Queue(sessionID), Error: why}))
}

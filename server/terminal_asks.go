package server

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// A terminal's commands reach the network only through their egress proxy, which holds a
// connection to a host it does not allow and asks the person at the terminal
// (host.NetworkAsk). The person at the terminal is whoever has one of its pages open: each
// question goes to every attached page (and to a page that attaches while it waits), the
// first answer counts, and every page hears of it so that it hides the question. The answer
// holds for the terminal's life. With no page attached nobody can answer: refused at once.

// DefaultTerminalAskTimeout is how long a terminal's question waits for an answer.
const DefaultTerminalAskTimeout = 2 * time.Minute

// Bounds on what a terminal's commands make the server hold for its pages: a command that
// tries a thousand hosts at once gets the first few asked and the rest refused.
const (
	termMaxQuestions  = 16  // waiting at once
	termPageQueueSize = 128 // frames not yet written to one page
)

// termAsks are one terminal's questions about the network and the answers given.
type termAsks struct {
	timeout time.Duration

	mu      sync.Mutex
	seq     int
	pages   map[*websocket.Conn]chan any // each page's frames, written in order
	pending map[string]*termQuestion     // by id
	answers map[string]bool              // by target: allowed or denied for the terminal's life
	closed  bool
}

// termQuestion is a question about one target, waiting for a page's answer.
type termQuestion struct {
	id, target string
	timer      *time.Timer
	done       chan struct{} // closed once answered (or timed out, or the terminal closed)
	allow      bool          // set before done is closed
}

// terminalQuestion is the frame that asks a page about a target.
type terminalQuestion struct {
	Type   string `json:"type"` // "network"
	ID     string `json:"id"`
	Target string `json:"target"`
}

// terminalAnswered tells the pages a question is settled, so that they hide it.
type terminalAnswered struct {
	Type  string `json:"type"` // "network-answered"
	ID    string `json:"id"`
	Allow bool   `json:"allow"`
}

func newTermAsks(timeout time.Duration) *termAsks {
	return &termAsks{timeout: timeout, pages: map[*websocket.Conn]chan any{},
		pending: map[string]*termQuestion{}, answers: map[string]bool{}}
}

// ask is the terminal's host.NetworkAsk: the remembered answer for target, else the first
// page's answer to a question about it, false when no page is attached, the question times
// out or the connection goes (ctx).
func (a *termAsks) ask(ctx context.Context, target string) bool {
	a.mu.Lock()
	if allow, ok := a.answers[target]; ok || a.closed || len(a.pages) == 0 {
		a.mu.Unlock()
		return allow
	}
	q := a.questionFor(target)
	a.mu.Unlock()
	if q == nil {
		return false
	}
	select {
	case <-q.done:
		return q.allow
	case <-ctx.Done():
		return false
	}
}

// questionFor is the pending question about target, asked of the pages if it is new; nil
// when too many wait (called with a.mu held: a page that attaches meanwhile gets it from
// attach, once).
func (a *termAsks) questionFor(target string) *termQuestion {
	for _, q := range a.pending {
		if q.target == target {
			return q // a second connection to it waits for the same answer
		}
	}
	if len(a.pending) >= termMaxQuestions {
		return nil
	}
	a.seq++
	q := &termQuestion{id: "q" + strconv.Itoa(a.seq), target: target, done: make(chan struct{})}
	q.timer = time.AfterFunc(a.timeout, func() { a.settle(q, false, false) })
	a.pending[q.id] = q
	a.send(terminalQuestion{Type: "network", ID: q.id, Target: target})
	return q
}

// answer settles question id with a page's answer; false when no such question waits
// (another page answered first, it timed out, or the id was never asked).
func (a *termAsks) answer(id string, allow bool) bool {
	a.mu.Lock()
	q, ok := a.pending[id]
	a.mu.Unlock()
	return ok && a.settle(q, allow, true)
}

// settle ends q with allow, remembered for its target when a person gave it; every page is
// told. It reports whether q was still pending.
func (a *termAsks) settle(q *termQuestion, allow, remember bool) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pending[q.id] != q {
		return false
	}
	delete(a.pending, q.id)
	q.timer.Stop()
	if remember {
		a.answers[q.target] = allow
	}
	q.allow = allow
	close(q.done)
	a.send(terminalAnswered{Type: "network-answered", ID: q.id, Allow: allow})
	return true
}

// attach adds a page, asking it the questions that wait; detach removes it. Its frames are
// written in order by a goroutine of its own (a Conn takes writes from several goroutines,
// the output's among them), so a question never comes after its answer and a page that
// takes nothing holds back neither the others nor the lock.
func (a *termAsks) attach(c *websocket.Conn) {
	frames := make(chan any, termPageQueueSize)
	go func() {
		for f := range frames {
			_ = writeFrame(c, f)
		}
	}()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pages[c] = frames
	for _, q := range a.pending {
		frames <- terminalQuestion{Type: "network", ID: q.id, Target: q.target}
	}
}

func (a *termAsks) detach(c *websocket.Conn) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if frames, ok := a.pages[c]; ok {
		close(frames)
		delete(a.pages, c)
	}
}

// send queues frame for every page (called with a.mu held); a page whose queue is full has
// stopped reading and misses it.
func (a *termAsks) send(frame any) {
	for _, frames := range a.pages {
		select {
		case frames <- frame:
		default:
		}
	}
}

// close refuses what waits; the terminal has ended.
func (a *termAsks) close() {
	a.mu.Lock()
	a.closed = true
	waiting := make([]*termQuestion, 0, len(a.pending))
	for _, q := range a.pending {
		waiting = append(waiting, q)
	}
	a.mu.Unlock()
	for _, q := range waiting {
		a.settle(q, false, false)
	}
}

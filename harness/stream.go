package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/store"
)

// flushEvery is how long streamed text may wait before it is stored and published.
const flushEvery = 50 * time.Millisecond

// finishDropped marks an assistant message whose answer broke off: it stays for people to
// see and is never sent to the model.
const finishDropped = "dropped"

// answer is one round's answer as it streams in.
type answer struct {
	t   *turn
	ws  host.Workspace // the workspace as this round saw it
	msg store.Message  // the answer so far; Parts in stream order
	// stored is set once msg is in the store. It is written first at the first flush
	// (flushEvery after the answer began) or at its end, with all it holds by then: an
	// answer that streams within that time costs one write.
	stored bool
	// text is the index in msg.Parts of the text part being streamed, -1 when none is open.
	text int
	// full is the open text part's whole text (its Text is set from it when needed:
	// appending to a string piece by piece would copy it each time); unsaved is its tail
	// not yet stored nor published (once the answer is stored).
	full, unsaved strings.Builder
	// byIndex maps the provider's call index to the call's part.
	byIndex map[int]int
	callIDs map[string]bool
	calls   []int // the parts of the calls, in stream order
	// groups are the calls as they are to run, and interactiveOnly says whether they are
	// all interactive (see plan); set when the answer ended well.
	groups          [][]int
	interactiveOnly bool
	// pend holds the writes not stored yet and their events: committed together, in one
	// transaction, flushEvery after the first of them, or with what follows the answer (its
	// first calls' start, or the turn's end).
	pend ops
}

// answer sends the transcript to the model and streams its answer into the store. It
// returns the answer (nil only when nothing was stored), with its last writes possibly not
// yet committed (ans.pend) when it ended well, and an error when the model failed, the turn
// was stopped or the store failed (then everything it had is committed).
func (t *turn) answer() (*answer, error) {
	ws, err := t.workspace()
	if err != nil {
		return nil, err
	}
	base := t.system(ws)
	req := provider.Request{Model: t.model, System: base, Tools: t.toolsForLLM(ws.ID)}
	var seals ops
	req.Messages, req.System, seals = t.request(base)
	// The last calls' outcomes and the seals of orphans go with the answer's first flush,
	// or at its end, or with a compaction.
	pend, err := t.fit(&req, base, append(t.takeCarry(), seals...), 0)
	if err != nil {
		if cerr := t.ev.commit(t.wctx, pend); cerr != nil {
			t.h.log.Error("store the last calls' outcomes", "session", t.sessionID, "error", cerr)
		}
		return nil, err
	}
	for retried := false; ; retried = true {
		a := &answer{t: t, ws: ws, text: -1, byIndex: map[int]int{}, callIDs: map[string]bool{},
			msg: store.Message{SessionID: t.sessionID, Role: store.RoleAssistant, Status: store.StatusStreaming,
				Provider: t.session.Provider, Model: t.model, Parts: []store.Part{}},
			pend: pend}
		err := a.read(req)
		if err == nil {
			a.end()
			return a, nil
		}
		if !retried && contextExceeded(err) && !a.stored && len(a.msg.Parts) == 0 && t.ctx.Err() == nil {
			// The provider says the request is longer than the model's window: compact
			// and try once more.
			// The window is below what was refused (in the harness's estimate; the
			// provider's own count is in its tokenizer's units): later requests, of this
			// turn and of every session on this model, are compacted before they are sent.
			est := EstimateTokens(req)
			t.window = t.h.windows.learn(t.session.Provider, t.model, est)
			t.h.log.Warn("the provider refused the request as too long: compacting", "session", t.sessionID,
				"tokens", est, "window", t.window, "error", err)
			if pend, err = t.fit(&req, base, a.pend, est); err == nil {
				continue
			}
			a.pend = pend
		}
		return a.fail(err)
	}
}

// streamItem is one result of Stream.Next (or of Stream), handed from the reading
// goroutine.
type streamItem struct {
	ev  provider.Event
	err error
}

// read asks the model and consumes its answer until the end or an error. The request and
// Next run on a goroutine of their own (streamReader) so that what waits is flushed on time
// even while the model has not begun (writes carried from before the answer) or pauses.
func (a *answer) read(req provider.Request) error {
	r := startStreamReader(a.t.ctx, a.t.prov, req)
	defer r.stop()
	return a.consume(r.items)
}

// consume handles the answer's items until the end or an error, flushing what waits at
// most flushEvery after it began to wait.
func (a *answer) consume(items <-chan streamItem) error {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	armed := false
	if a.pending() {
		// Writes carried from before the answer are not kept waiting on the model.
		timer.Reset(flushEvery)
		armed = true
	}
	for {
		select {
		case it := <-items:
			if errors.Is(it.err, io.EOF) {
				return nil
			}
			if it.err != nil {
				return it.err
			}
			a.handle(it.ev)
			if !armed && a.pending() {
				timer.Reset(flushEvery)
				armed = true
			}
		case <-timer.C:
			armed = false
			if err := a.flush(); err != nil {
				return err
			}
		}
	}
}

// streamReader asks the model and hands each item of its answer to items, on a goroutine
// of its own, until an error (io.EOF at the end) or stop.
type streamReader struct {
	items chan streamItem
	quit  chan struct{}
	wg    sync.WaitGroup

	mu     sync.Mutex
	s      provider.Stream // set once the model answers
	closed bool            // stop was called: a stream that answers later is closed at once
}

// startStreamReader asks prov for the answer to req on a new goroutine; stop ends it.
func startStreamReader(ctx context.Context, prov provider.Provider, req provider.Request) *streamReader {
	r := &streamReader{
		// A few items of slack: the reader waits while a flush is being written, which is
		// what a flush costs the stream anyway.
		items: make(chan streamItem, 8),
		quit:  make(chan struct{}),
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.run(ctx, prov, req)
	}()
	return r
}

// run is the reading goroutine: it hands on the stream's items, or the error that
// prevented one, until an error or quit.
func (r *streamReader) run(ctx context.Context, prov provider.Provider, req provider.Request) {
	st, err := prov.Stream(ctx, req)
	if err == nil {
		r.mu.Lock()
		if r.closed {
			_ = st.Close()
			err = errors.New("the answer was abandoned")
		}
		r.s = st
		r.mu.Unlock()
	}
	for err == nil {
		var ev provider.Event
		ev, err = st.Next()
		select {
		case r.items <- streamItem{ev, err}:
		case <-r.quit:
			return
		}
	}
	// Only this goroutine sets r.s, so it reads it without the lock.
	if r.s == nil {
		select {
		case r.items <- streamItem{err: err}:
		case <-r.quit:
		}
	}
}

// stop closes the stream, which unblocks a Next waiting on the connection, and waits for
// the reading goroutine to end.
func (r *streamReader) stop() {
	close(r.quit)
	r.mu.Lock()
	r.closed = true
	if r.s != nil {
		_ = r.s.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

// pending reports whether something waits to be stored or published.
func (a *answer) pending() bool {
	return (!a.stored && len(a.msg.Parts) > 0) || a.unsaved.Len() > 0 || len(a.pend) > 0
}

// handle takes one event of the answer.
func (a *answer) handle(ev provider.Event) {
	switch ev.Kind {
	case provider.EventText:
		if ev.Text == "" {
			return
		}
		if a.text >= 0 && a.text == len(a.msg.Parts)-1 {
			a.full.WriteString(ev.Text)
			if a.stored {
				a.unsaved.WriteString(ev.Text)
			}
			return
		}
		// A new run of text: after a call, or the first.
		a.text = a.addPart(store.Part{Kind: store.PartText, Status: store.StatusStreaming, Text: ev.Text})
		a.full.WriteString(ev.Text)
	case provider.EventToolCallStart:
		if _, dup := a.byIndex[ev.Index]; dup {
			return
		}
		id := ev.ID
		if id == "" || a.callIDs[id] {
			// A call needs an id of its own for its result to answer; some servers send
			// none, or one twice.
			id = newCallID()
		}
		a.callIDs[id] = true
		idx := a.addPart(store.Part{Kind: store.PartToolCall, Status: store.StatusPending, ToolName: ev.Name, CallID: id})
		a.byIndex[ev.Index] = idx
		a.calls = append(a.calls, idx)
	case provider.EventToolCallArgs:
		// Arguments stay in memory until the call runs (or is refused): a call that never
		// ran needs none kept, and this saves a write per call.
		if idx, ok := a.byIndex[ev.Index]; ok {
			a.msg.Parts[idx].Args += ev.Text
		}
	case provider.EventUsage:
		a.msg.TokensIn, a.msg.TokensOut = ev.Usage.InputTokens, ev.Usage.OutputTokens
	case provider.EventFinish:
		a.msg.Finish = string(ev.Finish)
	}
}

// addPart adds a part at the end of the answer, closing the open text part, and returns
// its index. Its id is made here, so that later writes can name it before it is stored;
// once the answer is stored (or queued to be), the part's own write is queued after the
// streamed text that waited, so writes and events keep their order.
func (a *answer) addPart(p store.Part) int {
	a.saveText()
	a.syncText()
	a.text = -1
	a.full.Reset()
	p.ID = store.NewID("prt_")
	p.MessageID = a.msg.ID
	a.msg.Parts = append(a.msg.Parts, p)
	idx := len(a.msg.Parts) - 1
	if a.stored {
		a.pend.add(func(ctx context.Context, tx *store.Tx) ([]store.NewEvent, error) {
			sp, err := tx.AppendPart(ctx, p)
			if err != nil {
				return nil, fmt.Errorf("store a part of answer %s: %w", a.msg.ID, err)
			}
			a.storedPart(idx, sp)
			return []store.NewEvent{partCreated(sp)}, nil
		})
	}
	return idx
}

// storedPart copies what the store set on a part (its seq and times) to the answer's.
func (a *answer) storedPart(idx int, sp store.Part) {
	p := &a.msg.Parts[idx]
	p.Seq, p.CreatedAt, p.UpdatedAt = sp.Seq, sp.CreatedAt, sp.UpdatedAt
}

// create queues the write of the answer with what it holds so far, and message.created.
func (a *answer) create() {
	a.syncText()
	a.msg.ID = store.NewID("msg_")
	for i := range a.msg.Parts {
		a.msg.Parts[i].MessageID = a.msg.ID
	}
	m := a.msg
	m.Parts = slices.Clone(a.msg.Parts)
	a.stored = true
	a.unsaved.Reset()
	a.t.lastAny = m.ID
	a.pend.add(func(ctx context.Context, tx *store.Tx) ([]store.NewEvent, error) {
		sm, err := tx.AppendMessage(ctx, m)
		if err != nil {
			return nil, fmt.Errorf("store the answer: %w", err)
		}
		a.msg.Seq, a.msg.CreatedAt, a.msg.UpdatedAt = sm.Seq, sm.CreatedAt, sm.UpdatedAt
		for i, sp := range sm.Parts {
			a.storedPart(i, sp)
		}
		return []store.NewEvent{messageCreated(sm)}, nil
	})
}

// saveText queues the open text part's unsaved text and its delta.
func (a *answer) saveText() {
	if a.unsaved.Len() == 0 {
		return
	}
	msgID, partID, delta := a.msg.ID, a.msg.Parts[a.text].ID, a.unsaved.String()
	a.unsaved.Reset()
	a.pend.add(func(ctx context.Context, tx *store.Tx) ([]store.NewEvent, error) {
		if err := tx.AppendPartText(ctx, partID, delta); err != nil {
			return nil, fmt.Errorf("store streamed text of answer %s: %w", msgID, err)
		}
		return []store.NewEvent{newEvent(EventPartDelta, PartDelta{MessageID: msgID, PartID: partID, Text: delta})}, nil
	})
}

// syncText sets the open text part's Text to all that streamed into it.
func (a *answer) syncText() {
	if a.text >= 0 {
		a.msg.Parts[a.text].Text = a.full.String()
	}
}

// flush stores and publishes what waited, in one transaction: the answer so far, once it
// has something, and what was carried into it.
func (a *answer) flush() error {
	switch {
	case a.stored:
		a.saveText()
	case len(a.msg.Parts) > 0:
		a.create()
	}
	return a.commit()
}

// commit stores and publishes the answer's queued writes. Writes the database could not
// take for a fault of its own (down, its disk full) stay queued, in order, for the answer's
// next commit or the turn's end, which is retried until it is stored.
func (a *answer) commit() error {
	o := a.pend
	a.pend = nil
	err := a.t.ev.commit(a.t.wctx, o)
	if err != nil && store.Fault(err) != "" {
		a.pend = append(o, a.pend...)
	}
	return err
}

// end completes the answer once the stream ended well: text parts complete, the message
// complete with its finish reason and usage. The calls stay pending (the first group may be
// started already), their arguments in memory, for runCalls. The writes stay queued, to be
// committed with the first calls' start or with the turn's end.
func (a *answer) end() {
	t := a.t
	a.msg.Status = store.StatusComplete
	if len(a.calls) > 0 {
		a.groups, a.interactiveOnly = t.plan(a.msg.Parts, a.calls)
	}
	if !a.stored {
		// The whole answer in one write (even an empty one: it ends the turn), with its
		// first calls already started: they run right after.
		a.syncText()
		for i := range a.msg.Parts {
			if p := &a.msg.Parts[i]; p.Kind == store.PartText {
				p.Status = store.StatusComplete
			}
		}
		if len(a.groups) > 0 {
			for _, pi := range a.groups[0] {
				startCall(&a.msg.Parts[pi])
			}
		}
		a.msg.Content = a.allText()
		a.create()
	} else {
		a.closeText(store.StatusComplete)
		a.msg.Content = a.allText()
		a.queueMessageUpdate()
	}
	t.lastAnswer = a.msg.ID
	t.addUsage(a.msg)
}

// queueMessageUpdate queues the write of the message's state now, and message.updated.
func (a *answer) queueMessageUpdate() {
	m := a.msg
	m.Parts = nil
	a.pend.add(func(ctx context.Context, tx *store.Tx) ([]store.NewEvent, error) {
		if err := tx.UpdateMessage(ctx, m); err != nil {
			return nil, fmt.Errorf("store the end of answer %s: %w", m.ID, err)
		}
		return []store.NewEvent{messageUpdated(m)}, nil
	})
}

// closeText ends the stored text parts still streaming with status, their whole text
// written once (which also stores any unsaved piece).
func (a *answer) closeText(status store.Status) {
	a.syncText()
	for i := range a.msg.Parts {
		p := &a.msg.Parts[i]
		if p.Kind != store.PartText || p.Status != store.StatusStreaming {
			continue
		}
		var delta []store.NewEvent
		if i == a.text && a.unsaved.Len() > 0 {
			delta = append(delta, newEvent(EventPartDelta, PartDelta{MessageID: a.msg.ID, PartID: p.ID, Text: a.unsaved.String()}))
			a.unsaved.Reset()
		}
		p.Status = status
		a.pend.add(updatePartOp(*p, "complete text of answer "+a.msg.ID, delta...))
	}
}

// updatePartOp is the write of a part's state and its part.updated, after the events
// given (a delta the write also stores).
func updatePartOp(p store.Part, what string, before ...store.NewEvent) op {
	return func(ctx context.Context, tx *store.Tx) ([]store.NewEvent, error) {
		if err := tx.UpdatePart(ctx, p); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		return append(before, partUpdated(p)), nil
	}
}

func (a *answer) allText() string {
	var b strings.Builder
	for _, p := range a.msg.Parts {
		if p.Kind == store.PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// fail ends an answer that did not come whole, and commits all it has. A stop keeps what
// streamed (the model sees its text next time, and its calls sealed as never run); a
// failure of the model drops the answer: it stays for people, marked, and never reaches the
// model.
func (a *answer) fail(cause error) (*answer, error) {
	t := a.t
	_, _, stopped := t.stopped()
	if stopped && !a.stored && len(a.msg.Parts) == 0 {
		if err := a.commit(); err != nil { // what was carried into the answer
			t.h.log.Error("store the last calls' outcomes", "session", t.sessionID, "error", err)
		}
		return nil, nil
	}
	why := fmt.Sprintf("the model's answer failed: %v", cause)
	if pe := (*provider.Error)(nil); errors.As(cause, &pe) && pe.Partial {
		why = fmt.Sprintf("the model's answer broke off: %v; what arrived was dropped and will not be sent to the model", cause)
	}
	callWhy := "the answer broke off before this call was complete; it did not run"
	textStatus := store.StatusError
	if stopped {
		why = context.Cause(t.ctx).Error()
		callWhy = "interrupted: the turn was stopped before this call ran"
		textStatus = store.StatusComplete
	}
	a.msg.Status = store.StatusError
	a.msg.Error = why
	if !stopped {
		a.msg.Finish = finishDropped
	}
	if !a.stored {
		// All in one write.
		a.syncText()
		for i := range a.msg.Parts {
			p := &a.msg.Parts[i]
			if p.Kind == store.PartText {
				p.Status = textStatus
			} else {
				sealCall(p, callWhy)
			}
		}
		a.msg.Content = a.allText()
		a.create()
	} else {
		a.closeText(textStatus)
		for _, i := range a.calls {
			p := &a.msg.Parts[i]
			sealCall(p, callWhy)
			a.pend.add(updatePartOp(*p, "seal call "+p.CallID))
		}
		a.msg.Content = a.allText()
		a.queueMessageUpdate()
	}
	a.calls = nil
	if stopped {
		t.lastAnswer = a.msg.ID // what streamed before the stop stays in the transcript
	}
	t.addUsage(a.msg)
	if err := a.commit(); err != nil {
		t.h.log.Error("seal a failed answer", "session", t.sessionID, "message", a.msg.ID, "error", err)
		t.keepForEnd(a.pend)
		a.pend = nil
		return a, fmt.Errorf("%s (and storing that failed: %v)", why, err)
	}
	return a, errors.New(why)
}

func (t *turn) addUsage(m store.Message) {
	t.usage.InputTokens += m.TokensIn
	t.usage.OutputTokens += m.TokensOut
}

func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

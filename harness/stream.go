package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
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
	// batch holds events not published yet; they go out in one write when the stream ends,
	// before anything else is published, or flushEvery after the first of them.
	batch []store.NewEvent
}

// answer sends the transcript to the model and streams its answer into the store. It
// returns the answer (nil only when nothing was stored) with its events possibly not yet
// published (ans.batch), and an error when the model failed or the turn was stopped.
func (t *turn) answer() (*answer, error) {
	ws, err := t.workspace()
	if err != nil {
		return nil, err
	}
	req := provider.Request{Model: t.model, System: t.system(ws), Tools: t.h.opts.Tools.Registry().ListForLLM()}
	req.Messages, req.System = t.request(req.System)

	a := &answer{t: t, ws: ws, text: -1, byIndex: map[int]int{}, callIDs: map[string]bool{},
		msg: store.Message{SessionID: t.sessionID, Role: store.RoleAssistant, Status: store.StatusStreaming,
			Provider: t.session.Provider, Model: t.model, Parts: []store.Part{}}}
	s, err := t.prov.Stream(t.ctx, req)
	if err != nil {
		return a.fail(err)
	}
	if err := a.read(s); err != nil {
		return a.fail(err)
	}
	return a, a.end()
}

// streamItem is one result of Stream.Next, handed from the reading goroutine.
type streamItem struct {
	ev  provider.Event
	err error
}

// read consumes s until its end or an error. Next runs on a goroutine of its own so that
// what waits is flushed on time even while the model pauses.
func (a *answer) read(s provider.Stream) error {
	items := make(chan streamItem, 64)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			ev, err := s.Next()
			select {
			case items <- streamItem{ev, err}:
			case <-quit:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		close(quit)
		_ = s.Close() // unblocks a Next waiting on the connection
		wg.Wait()
	}()

	timer := time.NewTimer(time.Hour)
	timer.Stop()
	armed := false
	for {
		select {
		case it := <-items:
			if errors.Is(it.err, io.EOF) {
				return nil
			}
			if it.err != nil {
				return it.err
			}
			if err := a.handle(it.ev); err != nil {
				return err
			}
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

// pending reports whether something waits to be stored or published.
func (a *answer) pending() bool {
	return (!a.stored && len(a.msg.Parts) > 0) || a.unsaved.Len() > 0 || len(a.batch) > 0
}

// handle takes one event of the answer.
func (a *answer) handle(ev provider.Event) error {
	switch ev.Kind {
	case provider.EventText:
		if ev.Text == "" {
			return nil
		}
		if a.text >= 0 && a.text == len(a.msg.Parts)-1 {
			a.full.WriteString(ev.Text)
			if a.stored {
				a.unsaved.WriteString(ev.Text)
			}
			return nil
		}
		// A new run of text: after a call, or the first.
		idx, err := a.addPart(store.Part{Kind: store.PartText, Status: store.StatusStreaming, Text: ev.Text})
		if err != nil {
			return err
		}
		a.text = idx
		a.full.WriteString(ev.Text)
	case provider.EventToolCallStart:
		if _, dup := a.byIndex[ev.Index]; dup {
			return nil
		}
		id := ev.ID
		if id == "" || a.callIDs[id] {
			// A call needs an id of its own for its result to answer; some servers send
			// none, or one twice.
			id = newCallID()
		}
		a.callIDs[id] = true
		idx, err := a.addPart(store.Part{Kind: store.PartToolCall, Status: store.StatusPending, ToolName: ev.Name, CallID: id})
		if err != nil {
			return err
		}
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
	return nil
}

// addPart adds a part at the end of the answer, closing the open text part; once the
// answer is stored, the part is stored at once and its event queued after the streamed
// text that waited, so events keep their order.
func (a *answer) addPart(p store.Part) (int, error) {
	if err := a.saveText(); err != nil {
		return 0, err
	}
	a.syncText()
	a.text = -1
	a.full.Reset()
	if !a.stored {
		a.msg.Parts = append(a.msg.Parts, p)
		return len(a.msg.Parts) - 1, nil
	}
	p.MessageID = a.msg.ID
	sp, err := a.t.h.opts.Store.AppendPart(a.t.wctx, p)
	if err != nil {
		return 0, fmt.Errorf("store a part of answer %s: %w", a.msg.ID, err)
	}
	a.msg.Parts = append(a.msg.Parts, sp)
	a.batch = append(a.batch, partCreated(sp))
	return len(a.msg.Parts) - 1, nil
}

// create stores the answer with what it holds so far and queues message.created.
func (a *answer) create() error {
	a.syncText()
	m, err := a.t.h.opts.Store.AppendMessage(a.t.wctx, a.msg)
	if err != nil {
		return fmt.Errorf("store the answer: %w", err)
	}
	a.msg, a.stored = m, true
	a.unsaved.Reset()
	a.t.lastAny = m.ID
	a.batch = append(a.batch, messageCreated(m))
	return nil
}

// saveText stores the open text part's unsaved text and queues its delta.
func (a *answer) saveText() error {
	if a.unsaved.Len() == 0 {
		return nil
	}
	p := a.msg.Parts[a.text]
	delta := a.unsaved.String()
	if err := a.t.h.opts.Store.AppendPartText(a.t.wctx, p.ID, delta); err != nil {
		return fmt.Errorf("store streamed text of answer %s: %w", a.msg.ID, err)
	}
	a.unsaved.Reset()
	a.batch = append(a.batch, newEvent(EventPartDelta, PartDelta{MessageID: a.msg.ID, PartID: p.ID, Text: delta}))
	return nil
}

// syncText sets the open text part's Text to all that streamed into it.
func (a *answer) syncText() {
	if a.text >= 0 {
		a.msg.Parts[a.text].Text = a.full.String()
	}
}

// flush stores and publishes what waited.
func (a *answer) flush() error {
	if !a.stored {
		if len(a.msg.Parts) == 0 {
			return nil
		}
		if err := a.create(); err != nil {
			return err
		}
	} else if err := a.saveText(); err != nil {
		return err
	}
	a.publish()
	return nil
}

// end completes the answer once the stream ended well: text parts complete, the message
// complete with its finish reason and usage. The calls stay pending (the first group may be
// running already), their arguments in memory, for runCalls. The events stay in the batch,
// published with the first calls' or with turn.finished.
func (a *answer) end() error {
	t := a.t
	a.msg.Status = store.StatusComplete
	if len(a.calls) > 0 {
		a.groups, a.interactiveOnly = t.plan(a.msg.Parts, a.calls)
	}
	if !a.stored {
		// The whole answer in one write (even an empty one: it ends the turn), with its
		// first calls already running: they start right after.
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
		if err := a.create(); err != nil {
			return err
		}
	} else {
		if err := a.closeText(store.StatusComplete); err != nil {
			return err
		}
		a.msg.Content = a.allText()
		if err := t.h.opts.Store.UpdateMessage(t.wctx, a.msg); err != nil {
			return fmt.Errorf("complete answer %s: %w", a.msg.ID, err)
		}
		a.batch = append(a.batch, messageUpdated(a.msg))
	}
	t.lastAnswer = a.msg.ID
	t.addUsage(a.msg)
	return nil
}

// closeText ends the stored text parts still streaming with status, their whole text
// written once (which also stores any unsaved piece).
func (a *answer) closeText(status store.Status) error {
	a.syncText()
	for i := range a.msg.Parts {
		p := &a.msg.Parts[i]
		if p.Kind != store.PartText || p.Status != store.StatusStreaming {
			continue
		}
		if i == a.text && a.unsaved.Len() > 0 {
			a.batch = append(a.batch, newEvent(EventPartDelta, PartDelta{MessageID: a.msg.ID, PartID: p.ID, Text: a.unsaved.String()}))
			a.unsaved.Reset()
		}
		p.Status = status
		if err := a.t.h.opts.Store.UpdatePart(a.t.wctx, *p); err != nil {
			return fmt.Errorf("complete text of answer %s: %w", a.msg.ID, err)
		}
		a.batch = append(a.batch, partUpdated(*p))
	}
	return nil
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

func (a *answer) publish() {
	a.t.ev.emit(a.t.wctx, a.batch...)
	a.batch = nil
}

// fail ends an answer that did not come whole. A stop keeps what streamed (the model sees
// its text next time, and its calls sealed as never run); a failure of the model drops the
// answer: it stays for people, marked, and never reaches the model.
func (a *answer) fail(cause error) (*answer, error) {
	t := a.t
	_, _, stopped := t.stopped()
	if stopped && !a.stored && len(a.msg.Parts) == 0 {
		a.publish()
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
	st := t.h.opts.Store
	var errs []error
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
		if err := a.create(); err != nil {
			return nil, fmt.Errorf("%s (and storing that failed: %v)", why, err)
		}
	} else {
		if err := a.closeText(textStatus); err != nil {
			errs = append(errs, err)
		}
		for _, i := range a.calls {
			p := &a.msg.Parts[i]
			sealCall(p, callWhy)
			if err := st.UpdatePart(t.wctx, *p); err != nil {
				errs = append(errs, fmt.Errorf("seal call %s: %w", p.CallID, err))
			}
			a.batch = append(a.batch, partUpdated(*p))
		}
		a.msg.Content = a.allText()
		if err := st.UpdateMessage(t.wctx, a.msg); err != nil {
			errs = append(errs, fmt.Errorf("mark answer %s failed: %w", a.msg.ID, err))
		}
		a.batch = append(a.batch, messageUpdated(a.msg))
	}
	a.calls = nil
	if stopped {
		t.lastAnswer = a.msg.ID // what streamed before the stop stays in the transcript
	}
	t.addUsage(a.msg)
	a.publish()
	if err := errors.Join(errs...); err != nil {
		t.h.log.Error("seal a failed answer", "session", t.sessionID, "message", a.msg.ID, "error", err)
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

package harness

import (
	"fmt"
	"slices"
	"sync"

	"github.com/jean2/jean2/store"
)

// historyCacheBytes bounds the transcripts kept between turns (their text, arguments,
// results and images, roughly); one session's is kept only when it is at most a quarter
// of it.
const historyCacheBytes = 16 << 20

// histories keeps the live transcripts of the sessions whose turns ran lately, so that the
// next turn of a conversation need not read them back from the store. Only the live part
// is kept (liveTail): what a compaction summarized is never sent again, so it is neither
// kept nor read, and a session that compaction holds within its model's window costs the
// same memory and the same reads at its thousandth turn as at its tenth. Only the harness
// adds and changes a session's messages, so a kept transcript is still whole when the
// turn's user message came right after it (its seq is the next); otherwise (a message was
// added or removed by something else, the process restarted) the store is read.
type histories struct {
	mu      sync.Mutex
	size    int64
	clock   int64
	entries map[string]*historyEntry
}

type historyEntry struct {
	msgs    []store.Message
	lastSeq int64
	bytes   int64
	used    int64
}

// take removes and returns the session's kept transcript, if any: the turn owns it now.
func (c *histories) take(sessionID string) *historyEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[sessionID]
	if e != nil {
		delete(c.entries, sessionID)
		c.size -= e.bytes
	}
	return e
}

// put keeps the live part of msgs, the session's transcript as stored, for its next turn,
// forgetting the least recently kept transcripts beyond historyCacheBytes.
func (c *histories) put(sessionID string, msgs []store.Message) {
	msgs = liveTail(msgs)
	if len(msgs) == 0 {
		return
	}
	e := &historyEntry{msgs: msgs, lastSeq: msgs[len(msgs)-1].Seq, bytes: transcriptBytes(msgs)}
	if e.bytes > historyCacheBytes/4 {
		return // a transcript that large is read again rather than held
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]*historyEntry{}
	}
	if old := c.entries[sessionID]; old != nil {
		c.size -= old.bytes
	}
	c.clock++
	e.used = c.clock
	c.entries[sessionID] = e
	c.size += e.bytes
	for c.size > historyCacheBytes {
		var oldest string
		for id, x := range c.entries {
			if oldest == "" || x.used < c.entries[oldest].used {
				oldest = id
			}
		}
		c.size -= c.entries[oldest].bytes
		delete(c.entries, oldest)
	}
}

func transcriptBytes(msgs []store.Message) int64 {
	var n int64
	for _, m := range msgs {
		n += int64(256 + len(m.Content))
		for _, p := range m.Parts {
			n += int64(256 + len(p.Text) + len(p.Args) + len(p.Result) + len(p.Visualization) + len(p.Data))
		}
	}
	return n
}

// liveTail is the part of a transcript the model is still sent: the messages after the
// newest compaction's UpToSeq (the compaction's own message among them); all of them when
// the session was never compacted. The messages are copied out, so what was summarized
// is not held through the slice's array.
func liveTail(history []store.Message) []store.Message {
	_, info, ok := lastCompaction(history)
	if !ok {
		return history
	}
	for i, m := range history {
		if m.Seq > info.UpToSeq || m.Seq == 0 {
			if i == 0 {
				return history
			}
			return slices.Clone(history[i:])
		}
	}
	return nil
}

// loadHistory gives the turn its session's live transcript (liveTail) up to and with its
// user message: the kept one when it is whole, else the store's.
func (t *turn) loadHistory() error {
	if e := t.h.hist.take(t.sessionID); e != nil && t.userMsg.Seq == e.lastSeq+1 {
		t.history = append(e.msgs, t.userMsg)
		return nil
	}
	if t.userMsg.Seq == 1 {
		// The session's first message: nothing to read.
		t.history = []store.Message{t.userMsg}
		return nil
	}
	history, err := t.h.opts.Store.LiveMessages(t.wctx, t.sessionID)
	if err != nil {
		return fmt.Errorf("could not read the transcript: %w", err)
	}
	t.history = history
	return nil
}

// keepHistory keeps the turn's transcript for the session's next turn, unless a write of
// the turn failed (the store may then hold something else than the turn's memory).
func (t *turn) keepHistory() {
	if t.ev.failed.Load() || len(t.history) == 0 {
		return
	}
	t.h.hist.put(t.sessionID, t.history)
}

package harness

import (
	"fmt"
	"sync"

	"github.com/jean2/jean2/store"
)

// historyCacheBytes bounds the transcripts kept between turns (their text, arguments,
// results and images, roughly).
const historyCacheBytes = 32 << 20

// histories keeps the transcripts of the sessions whose turns ran lately, so that the next
// turn of a conversation need not read its whole history back from the store. Only the
// harness adds and changes a session's messages, so a kept transcript is still whole when
// the turn's user message came right after it (its seq is the next); otherwise (a message
// was added or removed by something else, the process restarted) the store is read.
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

// put keeps msgs, the session's whole transcript as stored, for its next turn, forgetting
// the least recently kept transcripts beyond historyCacheBytes.
func (c *histories) put(sessionID string, msgs []store.Message) {
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

// loadHistory gives the turn its session's transcript up to and with its user message: the
// kept one when it is whole, else the store's.
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
	history, err := t.h.opts.Store.ListMessages(t.wctx, t.sessionID)
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

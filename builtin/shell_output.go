package builtin

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
)

// cappedOutput keeps what a stream wrote up to a cap: the first half and the last half of
// the cap, so a long build shows how it began and how it ended. While the cap is not
// reached it holds everything; past it, everything is also kept in full (up to spillCap)
// for the overflow file.
type shellCapped struct {
	mu       sync.Mutex
	max      int          // bytes shown: head + tail
	head     bytes.Buffer // the first max/2 bytes
	tail     []byte       // a ring of the last max/2 bytes, in order once unrolled
	tailPos  int
	tailFull bool
	total    int64
	full     bytes.Buffer // everything up to spillCap, for the overflow file
	spillCap int
}

func newShellCapped(max, spillCap int) *shellCapped {
	if max < 2 {
		max = 2
	}
	return &shellCapped{max: max, tail: make([]byte, max-max/2), spillCap: spillCap}
}

func (o *shellCapped) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.total += int64(len(p))
	if room := o.spillCap - o.full.Len(); room > 0 {
		o.full.Write(p[:min(room, len(p))])
	}
	rest := p
	if room := o.max/2 - o.head.Len(); room > 0 {
		n := min(room, len(rest))
		o.head.Write(rest[:n])
		rest = rest[n:]
	}
	for len(rest) > 0 {
		n := copy(o.tail[o.tailPos:], rest)
		rest = rest[n:]
		o.tailPos += n
		if o.tailPos == len(o.tail) {
			o.tailPos, o.tailFull = 0, true
		}
	}
	return len(p), nil
}

// truncated reports whether anything was left out of text.
func (o *shellCapped) truncated() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.total > int64(o.max)
}

// text is what the model and the visualization see: everything, or head, a note of how
// much was left out and where it is, and tail.
func (o *shellCapped) text(overflowNote string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var tail []byte
	if o.tailFull {
		tail = append(append(tail, o.tail[o.tailPos:]...), o.tail[:o.tailPos]...)
	} else {
		tail = o.tail[:o.tailPos]
	}
	if o.total <= int64(o.max) {
		return o.head.String() + string(tail)
	}
	omitted := o.total - int64(o.head.Len()) - int64(len(tail))
	var b strings.Builder
	b.Write(o.head.Bytes())
	fmt.Fprintf(&b, "\n\n[… %d bytes left out%s …]\n\n", omitted, overflowNote)
	b.Write(tail)
	return b.String()
}

// all is the whole output as far as it was kept, and whether it is whole.
func (o *shellCapped) all() ([]byte, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return bytes.Clone(o.full.Bytes()), int64(o.full.Len()) == o.total
}

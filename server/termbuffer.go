package server

import (
	"sync"

	"github.com/jean2/jean2/host"
)

// termScrollback is what a terminal printed last: the newest len(data) bytes, each kept at
// its offset in everything the shell ever printed, so a page that attaches again gets
// them (the replay) and each page follows from its own offset.
type termScrollback struct {
	data  []byte
	total int64 // bytes written since the start
}

func (r *termScrollback) write(p []byte) {
	size := int64(len(r.data))
	for len(p) > 0 {
		n := copy(r.data[r.total%size:], p)
		p = p[n:]
		r.total += int64(n)
	}
}

// oldest is the offset of the first byte still kept.
func (r *termScrollback) oldest() int64 { return max(0, r.total-int64(len(r.data))) }

// read copies what was written from off (not before oldest) into dst.
func (r *termScrollback) read(off int64, dst []byte) int {
	size := int64(len(r.data))
	n := 0
	for off < r.total && n < len(dst) {
		i := off % size
		end := min(size, i+(r.total-off))
		c := copy(dst[n:], r.data[i:end])
		n += c
		off += int64(c)
	}
	return n
}

// termOutput is a terminal's output as its pages follow it: one reader of the
// pseudo-terminal (pump) writes the scrollback, each attached page reads it from its own
// offset. The pump stops reading while a page would lose output it has not been sent, so
// the shell blocks on its writes as at a real terminal, and a slow page costs no memory
// beyond the scrollback; a page that takes no output for wsWriteTimeout is dropped, and
// the shell goes on.
type termOutput struct {
	mu     sync.Mutex
	cond   *sync.Cond
	sb     termScrollback
	pages  map[*termPage]struct{}
	exited bool // the shell ended and everything it printed is in sb
}

// termPage is one attached page's place in the output.
type termPage struct {
	off  int64
	gone bool
}

// termReadChunk is how much the pump reads at once; a page is behind when the scrollback
// has no room for another chunk it has not been sent.
const termReadChunk = 32 << 10

func newTermOutput(scrollback int) *termOutput {
	o := &termOutput{sb: termScrollback{data: make([]byte, max(scrollback, 2*termReadChunk))}, pages: map[*termPage]struct{}{}}
	o.cond = sync.NewCond(&o.mu)
	return o
}

// pump copies the terminal's output into the scrollback until the shell ends.
func (o *termOutput) pump(t host.Terminal) {
	buf := make([]byte, termReadChunk)
	for {
		n, err := t.Read(buf)
		o.mu.Lock()
		if n > 0 {
			o.sb.write(buf[:n])
			o.cond.Broadcast()
		}
		for err == nil && o.behind() {
			o.cond.Wait()
		}
		if err != nil {
			o.exited = true
			o.cond.Broadcast()
		}
		o.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// behind says a page would lose output if the pump read another chunk. Under mu.
func (o *termOutput) behind() bool {
	room := int64(len(o.sb.data) - termReadChunk)
	for p := range o.pages {
		if !p.gone && o.sb.total-p.off > room {
			return true
		}
	}
	return false
}

// attach adds a page that starts at the oldest byte kept: the scrollback is replayed.
func (o *termOutput) attach() *termPage {
	o.mu.Lock()
	defer o.mu.Unlock()
	p := &termPage{off: o.sb.oldest()}
	o.pages[p] = struct{}{}
	return p
}

// detach drops the page; the pump reads on if it waited for it.
func (o *termOutput) detach(p *termPage) {
	o.mu.Lock()
	defer o.mu.Unlock()
	p.gone = true
	delete(o.pages, p)
	o.cond.Broadcast()
}

// next waits for output the page has not been sent and copies it into dst. It returns 0
// and exited when the shell ended and the page has had everything, 0 and !exited when
// the page was detached.
func (o *termOutput) next(p *termPage, dst []byte) (n int, exited bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for !p.gone && p.off == o.sb.total && !o.exited {
		o.cond.Wait()
	}
	if p.gone {
		return 0, false
	}
	p.off = max(p.off, o.sb.oldest())
	n = o.sb.read(p.off, dst)
	return n, n == 0 && o.exited
}

// sent moves the page past n bytes it was sent.
func (o *termOutput) sent(p *termPage, n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	p.off += int64(n)
	o.cond.Broadcast()
}

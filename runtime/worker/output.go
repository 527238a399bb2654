package worker

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"
)

// Output limits: a tool's console output becomes log lines, never protocol data, and a flood
// of it must neither grow memory nor stall the host. Lines beyond the rate are counted and
// dropped; a line longer than maxOutputLine is cut.
const (
	maxOutputLine = 4 << 10
	stderrTail    = 8
)

// outputLog reads one of a worker's output streams and logs it line by line.
type outputLog struct {
	log    *slog.Logger
	level  slog.Level
	rate   float64 // lines per second
	burst  float64
	tokens float64
	last   time.Time

	dropped int

	mu   sync.Mutex
	tail []string // last lines, kept for error messages even when not logged
	keep int
	// note picks lines to keep whatever follows them (at most maxNoted).
	note  func(string) bool
	noted []string
}

const maxNoted = 4

func newOutputLog(log *slog.Logger, level slog.Level, linesPerSecond int, keepTail int) *outputLog {
	if linesPerSecond <= 0 {
		linesPerSecond = 200
	}
	burst := float64(linesPerSecond) * 2
	return &outputLog{log: log, level: level, rate: float64(linesPerSecond), burst: burst, tokens: burst, keep: keepTail}
}

// run consumes r until it ends. Memory is bounded by the read buffer: a long line is read
// past, not accumulated.
func (o *outputLog) run(r io.Reader) {
	br := bufio.NewReaderSize(r, maxOutputLine)
	for {
		line, err := br.ReadSlice('\n')
		cut := errors.Is(err, bufio.ErrBufferFull)
		if len(line) > 0 {
			text := string(trimNewline(line))
			if cut {
				text += " …(line cut)"
				// Skip the rest of the long line.
				for errors.Is(err, bufio.ErrBufferFull) {
					_, err = br.ReadSlice('\n')
				}
			}
			o.line(text)
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			o.flushDropped()
			return
		}
	}
}

func trimNewline(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

func (o *outputLog) line(text string) {
	if o.note != nil && o.note(text) {
		o.mu.Lock()
		if len(o.noted) < maxNoted {
			o.noted = append(o.noted, text)
		}
		o.mu.Unlock()
	}
	if o.keep > 0 {
		o.mu.Lock()
		if len(o.tail) == o.keep {
			copy(o.tail, o.tail[1:])
			o.tail = o.tail[:o.keep-1]
		}
		o.tail = append(o.tail, text)
		o.mu.Unlock()
	}
	now := time.Now()
	if !o.last.IsZero() {
		o.tokens += now.Sub(o.last).Seconds() * o.rate
		if o.tokens > o.burst {
			o.tokens = o.burst
		}
	}
	o.last = now
	if o.tokens < 1 {
		o.dropped++
		return
	}
	o.tokens--
	o.flushDropped()
	o.log.Log(context.Background(), o.level, text)
}

func (o *outputLog) flushDropped() {
	if o.dropped > 0 {
		o.log.Warn("worker output dropped: too many lines", "dropped", o.dropped)
		o.dropped = 0
	}
}

// notedLines returns the lines note picked out, oldest first.
func (o *outputLog) notedLines() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.noted...)
}

// lastLines returns the last lines read, oldest first.
func (o *outputLog) lastLines() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.tail...)
}

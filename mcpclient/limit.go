package mcpclient

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxMessageBytes is the cap of one message from an imported server when its
// mcp.json entry sets no maxMessageBytes: large enough for any sane tool result or resource,
// small enough that a few hostile servers cannot exhaust jean2's memory.
const DefaultMaxMessageBytes = 16 << 20

// MessageTooLargeError is a server that sent a message over its cap. The connection is
// dropped, so that jean2 never holds more than about the cap for one message.
type MessageTooLargeError struct {
	Server string
	Limit  int64
	// What was being read: "a stdio line", "an HTTP response body", "an SSE event".
	What string
}

func (e *MessageTooLargeError) Error() string {
	return fmt.Sprintf("MCP server %s sent a message longer than %d bytes (%s); jean2 stopped reading and dropped the connection. If the server is trusted and its messages are that large, raise \"maxMessageBytes\" in its mcp.json entry", e.Server, e.Limit, e.What)
}

// maxMessageBytes is the server's cap: its entry's, else the manager's (Options.MaxLineBytes).
func (s *Server) maxMessageBytes() int64 {
	switch {
	case s.cfg.MaxMessageBytes > 0:
		return s.cfg.MaxMessageBytes
	case s.maxLine > 0:
		return s.maxLine
	}
	return DefaultMaxMessageBytes
}

// sdkBackstop is the cap handed to the go-sdk's own readers (stdio frames, SSE events), above
// jean2's: jean2's counters trip first with the error that names the server, the SDK's only
// catch what a line counter cannot see (a JSON value spread over many lines) while keeping
// memory bounded all the same.
func sdkBackstop(limit int64) int {
	return int(min(2*limit, 1<<40))
}

// framing says where one message ends in a stream being counted.
type framing int

const (
	frameLine  framing = iota // newline-delimited JSON (stdio)
	frameEvent                // server-sent events: a blank line ends an event
	frameBody                 // the whole body is one message (application/json)
)

// capReader counts the bytes of the message being read and fails, once, when one exceeds
// the limit, before handing those bytes on. It keeps no copy: the memory bound is that of
// whoever reads through it, which then never buffers more than the limit and one read.
type capReader struct {
	r       io.Reader
	limit   int64
	framing framing
	tooBig  func() error // makes the error, and tells the server (once)

	n      int64 // bytes of the current message
	line   int64 // bytes of the current line (frameEvent)
	prevCR bool
	err    error
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.r.Read(p)
	if c.count(p[:n]) {
		c.err = c.tooBig()
		return 0, c.err
	}
	return n, err
}

// count adds b to the message being read and reports whether it went over the limit.
func (c *capReader) count(b []byte) bool {
	switch c.framing {
	case frameBody:
		c.n += int64(len(b))
		return c.n > c.limit
	case frameLine:
		for len(b) > 0 {
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				c.n += int64(len(b))
				return c.n > c.limit
			}
			if c.n+int64(i) > c.limit {
				return true
			}
			c.n, b = 0, b[i+1:]
		}
		return false
	}
	// Server-sent events end at an empty line; lines end in \n, \r\n or \r.
	for _, ch := range b {
		switch {
		case ch == '\n' && c.prevCR:
			c.prevCR = false
			continue
		case ch == '\n' || ch == '\r':
			c.prevCR = ch == '\r'
			if c.line == 0 {
				c.n = 0
				continue
			}
			c.line = 0
		default:
			c.prevCR = false
			c.line++
		}
		c.n++
		if c.n > c.limit {
			return true
		}
	}
	return false
}

// capBody caps the body of a response: per event for an event stream, whole otherwise.
type capBody struct {
	capReader
	io.Closer
}

// capTransport caps every response body read from an HTTP server (JSON answers, SSE
// streams, error bodies), which the go-sdk's streamable client would otherwise read whole.
type capTransport struct {
	next   http.RoundTripper
	server string
	limit  int64
	tooBig func(error) // tells the server
}

func (t capTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil || resp.Body == nil || resp.Body == http.NoBody {
		return resp, err
	}
	f, what := frameBody, "an HTTP response body"
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		f, what = frameEvent, "an SSE event"
	}
	var once sync.Once
	e := &MessageTooLargeError{Server: t.server, Limit: t.limit, What: what}
	resp.Body = &capBody{
		capReader: capReader{r: resp.Body, limit: t.limit, framing: f, tooBig: func() error {
			once.Do(func() { t.tooBig(e) })
			return e
		}},
		Closer: resp.Body,
	}
	return resp, nil
}

// commandTransport runs a stdio server as the go-sdk's CommandTransport does (stdin closed
// on Close, then SIGTERM, then SIGKILL) but reads its stdout through a capReader: the SDK's
// CommandTransport has a fixed 16 MiB cap whose error names neither the server nor the cap.
type commandTransport struct {
	cmd       *exec.Cmd
	release   func() // once the process has exited (the sandbox's cgroup and proxy)
	terminate time.Duration
	server    string
	limit     int64
	tooBig    func(error)
}

func (t *commandTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// A server whose children keep stderr open (sh -c 'a | b') would hold Wait, and so
	// Close, forever once its stdout is no longer read: its pipes are closed this long after
	// it exited, which ends the children with SIGPIPE.
	t.cmd.WaitDelay = t.terminate
	if err := t.cmd.Start(); err != nil {
		t.release()
		return nil, err
	}
	var once sync.Once
	e := &MessageTooLargeError{Server: t.server, Limit: t.limit, What: "a stdio line"}
	r := &capReader{r: stdout, limit: t.limit, framing: frameLine, tooBig: func() error {
		once.Do(func() { t.tooBig(e) })
		return e
	}}
	tr := &mcp.IOTransport{
		// The connection is closed by closing stdin; stdout ends when the process does.
		Reader:        nopReadCloser{r},
		Writer:        &procStdin{WriteCloser: stdin, cmd: t.cmd, terminate: t.terminate, release: t.release},
		MaxLineLength: sdkBackstop(t.limit),
	}
	return tr.Connect(ctx)
}

type nopReadCloser struct{ io.Reader }

func (nopReadCloser) Close() error { return nil }

// procStdin is the server's stdin; closing it ends the server as the MCP spec says: stdin
// closed, then SIGTERM, then SIGKILL, each after the terminate duration.
type procStdin struct {
	io.WriteCloser
	cmd       *exec.Cmd
	terminate time.Duration
	release   func()
}

func (p *procStdin) Close() error {
	defer p.release()
	if err := p.WriteCloser.Close(); err != nil {
		return fmt.Errorf("closing stdin: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	wait := func() (error, bool) {
		select {
		case err := <-exited:
			return err, true
		case <-time.After(p.terminate):
			return nil, false
		}
	}
	if err, ok := wait(); ok {
		return err
	}
	if p.cmd.Process.Signal(syscall.SIGTERM) == nil {
		if err, ok := wait(); ok {
			return err
		}
	}
	if err := p.cmd.Process.Kill(); err != nil {
		return err
	}
	if err, ok := wait(); ok {
		return err
	}
	return fmt.Errorf("the server process did not exit after SIGKILL")
}

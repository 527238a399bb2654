package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/jean2/jean2/internal/rawio"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxMessageBytes bounds one message read from stdio.
const MaxMessageBytes = 16 << 20

// StdioTransport is MCP's stdio transport (newline-delimited JSON-RPC) over a reader and a
// writer, for `jean2 mcp`. It does what mcp.IOTransport does with less work per message:
// the go-sdk decodes each incoming line three times (as a batch, as a message, its method)
// with a decoder that allocates 32 KB or more each time, which on a small tools/call is
// most of the server's cost. Here a line is decoded once, with encoding/json. Batches (a
// line holding an array, allowed by the 2025-03-26 revision only) are handed to the
// go-sdk's decoder one message at a time.
//
// When Reader or Writer is an *os.File for a pipe or socket in blocking mode (stdin and
// stdout as an MCP client starts jean2 mcp), the connection reads and writes a non-blocking
// duplicate that the Go runtime polls, and restores blocking mode when it closes: see
// pollable. Nothing else may read that Reader or write that Writer meanwhile.
type StdioTransport struct {
	Reader io.Reader
	Writer io.Writer
}

// Connect starts reading lines; the connection ends when the reader does.
func (t *StdioTransport) Connect(context.Context) (mcp.Connection, error) {
	return t.connect(nil), nil
}

// connect starts the connection. take, when given, sees each message as soon as it is
// decoded, on the reading goroutine, and keeps those it takes from the go-sdk: the fast
// path's calls start there without two more goroutine hand-offs (fastcall.go).
func (t *StdioTransport) connect(take func(jsonrpc.Message) bool) *stdioConn {
	r, w := t.Reader, t.Writer
	c := &stdioConn{incoming: make(chan lineOrErr), closed: make(chan struct{}), readerDone: make(chan struct{}), take: take}
	if f, undo := pollable(r); f != nil {
		r = f
		c.undo = append(c.undo, undo)
		c.readerStops = true
	}
	if f, undo := pollable(w); f != nil {
		w = f
		c.undo = append(c.undo, undo)
	}
	c.w = rawio.Writer(w)
	c.rr = rawio.Reader(r)
	go c.readLines(c.rr)
	return c
}

type lineOrErr struct {
	msgs []jsonrpc.Message
	err  error
}

type stdioConn struct {
	writeMu sync.Mutex
	w       io.Writer

	incoming  chan lineOrErr
	pending   []jsonrpc.Message // the rest of a batch
	closeOnce sync.Once
	closed    chan struct{}
	undo      []func() // closes the polled duplicates of stdin and stdout

	readerDone  chan struct{} // closed when readLines returns
	readerStops bool          // closing the polled reader ends readLines, so Close waits for it

	take func(jsonrpc.Message) bool // see StdioTransport.connect
	rr   io.Reader                  // what readLines reads (rawio.Reader of the input)
}

// expectMessage tells the reader a message is due within about d (rawio.Expect).
func (c *stdioConn) expectMessage(d time.Duration) { rawio.Expect(c.rr, d) }

// readLines runs until the reader ends or fails. A line that is not valid JSON-RPC is
// answered by the go-sdk as the error it is (the read fails and the session ends), as with
// its own transport.
func (c *stdioConn) readLines(r io.Reader) {
	defer close(c.readerDone)
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readLine(br)
		if len(bytes.TrimSpace(line)) > 0 {
			msgs, derr := decodeLine(line)
			if derr == nil && c.take != nil {
				msgs = slices.DeleteFunc(msgs, c.take)
			}
			if len(msgs) > 0 || derr != nil {
				select {
				case c.incoming <- lineOrErr{msgs: msgs, err: derr}:
				case <-c.closed:
					return
				}
			}
			if derr != nil {
				return
			}
		}
		if err != nil {
			select {
			case c.incoming <- lineOrErr{err: err}:
			case <-c.closed:
			}
			return
		}
	}
}

// readLine reads one line without its newline, refusing one longer than MaxMessageBytes.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > MaxMessageBytes {
			return nil, fmt.Errorf("an MCP message is longer than %d bytes", MaxMessageBytes)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\n")), err
	}
}

// wireMessage is a JSON-RPC message as it arrives.
type wireMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      any             `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *jsonrpc.Error  `json:"error"`
}

func decodeLine(line []byte) ([]jsonrpc.Message, error) {
	line = bytes.TrimSpace(line)
	if line[0] == '[' {
		var raws []json.RawMessage
		if err := json.Unmarshal(line, &raws); err != nil {
			return nil, fmt.Errorf("unmarshaling a JSON-RPC batch: %w", err)
		}
		if len(raws) == 0 {
			return nil, errors.New("empty JSON-RPC batch")
		}
		msgs := make([]jsonrpc.Message, len(raws))
		for i, raw := range raws {
			m, err := jsonrpc.DecodeMessage(raw)
			if err != nil {
				return nil, err
			}
			msgs[i] = m
		}
		return msgs, nil
	}
	var w wireMessage
	if err := json.Unmarshal(line, &w); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	if w.JSONRPC != "2.0" {
		return nil, fmt.Errorf("invalid message version tag %q; expected \"2.0\"", w.JSONRPC)
	}
	id, err := jsonrpc.MakeID(w.ID)
	if err != nil {
		return nil, err
	}
	if w.Method != nil {
		return []jsonrpc.Message{&jsonrpc.Request{ID: id, Method: *w.Method, Params: w.Params}}, nil
	}
	if !id.IsValid() {
		return nil, errors.New("a JSON-RPC response without an id")
	}
	resp := &jsonrpc.Response{ID: id, Result: w.Result}
	if w.Error != nil {
		resp.Error = w.Error
	}
	return []jsonrpc.Message{resp}, nil
}

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if len(c.pending) > 0 {
		m := c.pending[0]
		c.pending = c.pending[1:]
		return m, nil
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case in := <-c.incoming:
		if in.err != nil {
			return nil, in.err
		}
		c.pending = in.msgs[1:]
		return in.msgs[0], nil
	}
}

func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("marshaling message: %w", err)
	}
	return c.writeLine(append(data, '\n'))
}

// writeLine writes one encoded message, newline included.
func (c *stdioConn) writeLine(data []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	select {
	case <-c.closed:
		return io.ErrClosedPipe
	default:
	}
	_, err := c.w.Write(data)
	return err
}

// Close stops handing out messages. A polled reader is closed, which ends the read waiting
// on it, and Close waits for the reading goroutine; any other reader is left to end on its
// own (a blocking read of stdin cannot be interrupted, and the process ends soon after).
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		for _, undo := range c.undo {
			undo()
		}
		if c.readerStops {
			<-c.readerDone
		}
	})
	return nil
}

func (c *stdioConn) SessionID() string { return "" }

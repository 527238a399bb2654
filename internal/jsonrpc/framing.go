package jsonrpc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxLineSize bounds one message on the wire.
const DefaultMaxLineSize = 64 << 20

// LineTooLongError ends a connection whose peer sent a line longer than the limit. Reading
// stops at the limit, so a hostile peer cannot make the reader hold more than that.
type LineTooLongError struct {
	Limit int
}

func (e *LineTooLongError) Error() string {
	return fmt.Sprintf("jsonrpc: protocol error: a message is longer than the %d-byte limit (a message must fit on one line of at most that size)", e.Limit)
}

// lineReader splits a stream into lines of at most max bytes, without the line ending.
type lineReader struct {
	br  *bufio.Reader
	max int
	buf []byte // holds a line that spans more than the bufio buffer
}

func newLineReader(r io.Reader, max int) *lineReader {
	size := 64 << 10
	if max < size {
		size = max
	}
	if size < 16 {
		size = 16
	}
	return &lineReader{br: bufio.NewReaderSize(r, size), max: max}
}

// next returns the next non-blank line. The slice is valid until the following call.
func (lr *lineReader) next() ([]byte, error) {
	for {
		line, err := lr.readLine()
		if err != nil {
			return nil, err
		}
		line = bytes.TrimRight(line, "\r")
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		return line, nil
	}
}

func (lr *lineReader) readLine() ([]byte, error) {
	frag, err := lr.br.ReadSlice('\n')
	if err == nil {
		if len(frag)-1 > lr.max {
			return nil, &LineTooLongError{Limit: lr.max}
		}
		return frag[:len(frag)-1], nil
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		if errors.Is(err, io.EOF) && len(frag) > 0 {
			// A last line without its newline is incomplete: the peer died mid-message.
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	lr.buf = append(lr.buf[:0], frag...)
	for {
		frag, err = lr.br.ReadSlice('\n')
		if len(lr.buf)+len(frag) > lr.max+1 || (err == nil && len(lr.buf)+len(frag)-1 > lr.max) {
			return nil, &LineTooLongError{Limit: lr.max}
		}
		lr.buf = append(lr.buf, frag...)
		switch {
		case err == nil:
			line := lr.buf[:len(lr.buf)-1]
			if cap(lr.buf) > 4<<20 {
				// Do not keep a huge buffer alive for the rest of the connection.
				out := line
				lr.buf = nil
				return out, nil
			}
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}

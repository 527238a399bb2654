package jsonrpc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
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

// ResponseTooLongError is an answer longer than Options.MaxResponseSize. It is refused by
// its length before any of it is decoded, and the reader holds at most the limit of it: the
// rest of the line is read past and dropped. When the line's beginning names the request it
// answers (Known), that request fails with this error and the connection goes on; otherwise
// the connection ends with it.
type ResponseTooLongError struct {
	ID    int64 // the request it answers, when Known
	Known bool
	Limit int   // Options.MaxResponseSize
	Size  int64 // the line's length in bytes; when !Known, the length read before it was refused
}

func (e *ResponseTooLongError) Error() string {
	if !e.Known {
		return fmt.Sprintf("jsonrpc: protocol error: a message that is not a request is longer than the %d-byte limit for an answer (an answer whose id comes before its result is refused alone)", e.Limit)
	}
	return fmt.Sprintf("jsonrpc: the answer to request %d is %d bytes, over the %d-byte limit for an answer; it was refused unread", e.ID, e.Size, e.Limit)
}

// lineReader splits a stream into lines of at most max bytes, without the line ending. A
// line whose beginning does not show it to be a request or a notification is held to
// maxResp instead (when set and lower).
type lineReader struct {
	br      *bufio.Reader
	max     int
	maxResp int
	buf     []byte // holds a line that spans more than the bufio buffer
}

func newLineReader(r io.Reader, max, maxResp int) *lineReader {
	size := 64 << 10
	if max < size {
		size = max
	}
	if size < 16 {
		size = 16
	}
	if maxResp <= 0 || maxResp >= max {
		maxResp = 0
	}
	return &lineReader{br: bufio.NewReaderSize(r, size), max: max, maxResp: maxResp}
}

// lineKind is what the beginning of a line shows it to be.
type lineKind struct {
	request bool  // a "method" member came before any "result" or "error"
	id      int64 // the "id" member before "result" or "error", when known
	known   bool
}

// classify reads the members at the beginning of a line, as far as they are complete, to
// tell a request or a notification from an answer and to find the id an answer carries
// before its result. A line is a request when a "method" member with a non-empty string
// comes first of "method", "result" and "error", and no later complete member names one
// of them again (the decoder takes the last of duplicate keys). Keys are matched as the
// decoder matches them (ASCII case ignored); a line it cannot read (an escaped or non-ASCII
// key, a malformed member) is not a request, and its id is unknown. What a line that is
// called a request turns out to be past its beginning is checked again once it is decoded
// (Conn.dispatch).
func classify(data []byte) (k lineKind) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return k
	}
	i = skipSpace(data, i+1)
	method := false
	for i < len(data) && data[i] == '"' {
		kEnd, escaped, ok := scanString(data, i)
		if !ok {
			break // the key runs past what was read
		}
		if escaped {
			return lineKind{}
		}
		key := data[i+1 : kEnd-1]
		for _, c := range key {
			if c >= 0x80 {
				return lineKind{}
			}
		}
		i = skipSpace(data, kEnd)
		if i >= len(data) {
			break
		}
		if data[i] != ':' {
			return lineKind{}
		}
		i = skipSpace(data, i+1)
		vEnd, ok := scanValue(data, i, 1)
		switch {
		case isKey(key, "result"), isKey(key, "error"):
			if method {
				return lineKind{}
			}
			return k
		case isKey(key, "method"):
			if method || !ok || vEnd-i < 3 || data[i] != '"' {
				return lineKind{}
			}
			method = true
		case !ok:
			// A value that runs past what was read (a request's large params).
			return lineKind{request: method, id: k.id, known: k.known && !method}
		case isKey(key, "id"):
			// A later "id" wins in the decoder too.
			n, err := strconv.ParseInt(string(data[i:vEnd]), 10, 64)
			k.id, k.known = n, err == nil
		}
		i = skipSpace(data, vEnd)
		if i >= len(data) {
			break
		}
		if data[i] != ',' {
			switch {
			case data[i] == '}' && method:
				return lineKind{request: true}
			case data[i] == '}':
				return k
			}
			return lineKind{}
		}
		i = skipSpace(data, i+1)
	}
	if method {
		return lineKind{request: true}
	}
	// The beginning ended between members: not a request, and its id, if it came, holds.
	return k
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
		if lr.maxResp > 0 && len(frag)-1 > lr.maxResp {
			if k := classify(frag); !k.request {
				return nil, &ResponseTooLongError{ID: k.id, Known: k.known, Limit: lr.maxResp, Size: int64(len(frag) - 1)}
			}
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
	// The line is longer than the buffer: what its beginning shows decides its limit, before
	// any more of it is read.
	limit := lr.max
	var k lineKind
	if lr.maxResp > 0 {
		if k = classify(frag); !k.request {
			limit = lr.maxResp
		}
	}
	lr.buf = append(lr.buf[:0], frag...)
	for {
		frag, err = lr.br.ReadSlice('\n')
		if len(lr.buf)+len(frag) > limit+1 || (err == nil && len(lr.buf)+len(frag)-1 > limit) {
			if limit == lr.max {
				return nil, &LineTooLongError{Limit: lr.max}
			}
			return nil, lr.refuseAnswer(k, int64(len(lr.buf)+len(frag)), err)
		}
		lr.grow(len(frag), limit+1)
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

// isKey reports whether key matches name as the decoder matches member names (ASCII case
// ignored).
func isKey(key []byte, name string) bool {
	return len(key) == len(name) && equalFoldASCII(key, name)
}

// grow makes room for n more bytes in buf, doubling (append grows large slices by a quarter,
// which costs several times the line in copies), and never beyond most, what the line may
// hold.
func (lr *lineReader) grow(n, most int) {
	need := len(lr.buf) + n
	if need <= cap(lr.buf) {
		return
	}
	size := min(max(2*cap(lr.buf), need, 256<<10), max(most, need))
	nb := make([]byte, len(lr.buf), size)
	copy(nb, lr.buf)
	lr.buf = nb
}

// refuseAnswer refuses an answer over maxResp once read bytes of it were read (the last
// fragment ending the line when err is nil). An answer whose request is known is read past
// to its end, holding nothing, so the connection can go on; one whose request is unknown
// ends the connection and is not read further.
func (lr *lineReader) refuseAnswer(k lineKind, read int64, err error) error {
	if cap(lr.buf) > 4<<20 {
		lr.buf = nil
	}
	if !k.known {
		return &ResponseTooLongError{Limit: lr.maxResp, Size: read}
	}
	for errors.Is(err, bufio.ErrBufferFull) {
		var frag []byte
		frag, err = lr.br.ReadSlice('\n')
		read += int64(len(frag))
	}
	switch {
	case err == nil:
		return &ResponseTooLongError{ID: k.id, Known: true, Limit: lr.maxResp, Size: read - 1}
	case errors.Is(err, io.EOF):
		return io.ErrUnexpectedEOF
	default:
		return err
	}
}

package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/jean2/jean2/host"
)

// Terminals in the web client (docs/web.md, "Terminal"): the person's shell on a
// pseudo-terminal in a workspace, confined as the shell tool's commands (host.OpenTerminal),
// followed by any number of pages over a WebSocket. A terminal lives on this instance until
// it is closed, its shell exits, its workspace is deleted or the server closes.

// Terminal limits: a terminal is a process tree and a pump; a client should not open them
// without bound.
const (
	DefaultTerminalsPerWorkspace = 4
	DefaultTerminals             = 16
	DefaultTerminalScrollback    = 256 << 10
)

// TerminalOptions bound the terminals (zero fields: the defaults above).
type TerminalOptions struct {
	PerWorkspace, Total int
	// Scrollback is the bytes of output kept per terminal and replayed to a page that
	// attaches again.
	Scrollback int
	// AskTimeout is how long a question about the network waits for a page's answer
	// (terminal_asks.go; 0: DefaultTerminalAskTimeout).
	AskTimeout time.Duration
}

// terminals are the open terminals by id.
type terminals struct {
	opts TerminalOptions
	mu   sync.Mutex
	byID map[string]*liveTerminal // a nil term is one being opened: it counts toward the limits
}

// liveTerminal is one open terminal.
type liveTerminal struct {
	ID          string    `json:"id"`
	WorkspaceID string    `json:"workspaceId"`
	Created     time.Time `json:"created"`
	term        host.Terminal
	out         *termOutput
	asks        *termAsks
}

func newTerminals(o TerminalOptions) *terminals {
	if o.PerWorkspace <= 0 {
		o.PerWorkspace = DefaultTerminalsPerWorkspace
	}
	if o.Total <= 0 {
		o.Total = DefaultTerminals
	}
	if o.Scrollback <= 0 {
		o.Scrollback = DefaultTerminalScrollback
	}
	if o.AskTimeout <= 0 {
		o.AskTimeout = DefaultTerminalAskTimeout
	}
	return &terminals{opts: o, byID: map[string]*liveTerminal{}}
}

// reserve takes a place for a new terminal of workspace wsID, within the limits.
func (ts *terminals) reserve(wsID string) (*liveTerminal, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	inWS := 0
	for _, t := range ts.byID {
		if t.WorkspaceID == wsID {
			inWS++
		}
	}
	if inWS >= ts.opts.PerWorkspace {
		return nil, errorf(http.StatusTooManyRequests, codeConflict, "workspace %s has %d terminals open, the most it may: close one first", wsID, inWS)
	}
	if len(ts.byID) >= ts.opts.Total {
		return nil, errorf(http.StatusTooManyRequests, codeConflict, "the server has %d terminals open, the most it may: close one first", len(ts.byID))
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	t := &liveTerminal{ID: "term-" + hex.EncodeToString(b[:]), WorkspaceID: wsID, Created: time.Now().UTC(),
		asks: newTermAsks(ts.opts.AskTimeout)}
	ts.byID[t.ID] = t
	return t, nil
}

// get is an open terminal (not one being opened).
func (ts *terminals) get(id string) (*liveTerminal, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t, ok := ts.byID[id]
	return t, ok && t.term != nil
}

// list is the workspace's open terminals, oldest first.
func (ts *terminals) list(wsID string) []*liveTerminal {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	out := []*liveTerminal{}
	for _, t := range ts.byID {
		if t.term != nil && t.WorkspaceID == wsID {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b *liveTerminal) int { return a.Created.Compare(b.Created) })
	return out
}

// remove takes the terminal out of the set; it reports whether it was there.
func (ts *terminals) remove(id string) (*liveTerminal, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t, ok := ts.byID[id]
	delete(ts.byID, id)
	return t, ok
}

// close ends the terminal's shell and waits for its output to be read to the end.
func (t *liveTerminal) close() error {
	if t.term == nil {
		return nil
	}
	t.asks.close()
	return t.term.Close()
}

// closeWhere closes every open terminal that keep selects (a workspace's, or all).
func (ts *terminals) closeWhere(keep func(*liveTerminal) bool) error {
	ts.mu.Lock()
	var doomed []*liveTerminal
	for id, t := range ts.byID {
		if t.term != nil && keep(t) {
			doomed = append(doomed, t)
			delete(ts.byID, id)
		}
	}
	ts.mu.Unlock()
	var errs []error
	for _, t := range doomed {
		errs = append(errs, t.close())
	}
	return errors.Join(errs...)
}

// terminalBody is the body of POST /api/workspaces/{id}/terminals: the page's size.
type terminalBody struct {
	Rows int `json:"rows"`
	Cols int `json:"cols"`
}

func terminalSize(rows, cols int) (host.TerminalSize, error) {
	if rows == 0 && cols == 0 {
		return host.TerminalSize{Rows: 24, Cols: 80}, nil
	}
	if rows < 1 || rows > 1000 || cols < 1 || cols > 1000 {
		return host.TerminalSize{}, badRequest("a terminal is 1 to 1000 rows and columns, not %dx%d", cols, rows)
	}
	return host.TerminalSize{Rows: uint16(rows), Cols: uint16(cols)}, nil
}

func (s *Server) listTerminals(w http.ResponseWriter, r *http.Request) error {
	ws, err := s.workspace(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"terminals": s.terms.list(ws.ID)})
	return nil
}

// createTerminal opens a terminal in the workspace; the page then attaches to its socket.
func (s *Server) createTerminal(w http.ResponseWriter, r *http.Request) error {
	var b terminalBody
	if r.ContentLength != 0 {
		if err := decodeBody(w, r, &b); err != nil {
			return err
		}
	}
	size, err := terminalSize(b.Rows, b.Cols)
	if err != nil {
		return err
	}
	ws, err := s.workspace(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	t, err := s.terms.reserve(ws.ID)
	if err != nil {
		return err
	}
	term, err := s.host.OpenTerminal(r.Context(), host.Workspace{ID: ws.ID, Path: ws.Path, Allowed: ws.AllowedPaths}, t.ID, size, t.asks.ask)
	if err != nil {
		s.terms.remove(t.ID)
		if errors.Is(err, host.ErrNoTerminal) {
			return errorf(http.StatusConflict, codeConflict, "%v", err)
		}
		return errorf(http.StatusInternalServerError, codeInternal, "open a terminal in workspace %s: %v", ws.ID, err)
	}
	out := newTermOutput(s.terms.opts.Scrollback)
	s.terms.mu.Lock()
	t.term, t.out = term, out
	s.terms.mu.Unlock()
	go s.followTerminal(t)
	writeJSON(w, http.StatusCreated, t)
	return nil
}

// followTerminal reads the terminal's output until its shell ends, then lets it go.
func (s *Server) followTerminal(t *liveTerminal) {
	t.out.pump(t.term)
	if _, ok := s.terms.remove(t.ID); ok {
		if err := t.close(); err != nil {
			s.log.Warn("terminal: close after its shell ended", "terminal", t.ID, "error", err)
		}
	}
}

func (s *Server) deleteTerminal(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	t, ok := s.terms.get(id)
	if !ok {
		return errorf(http.StatusNotFound, codeNotFound, "no open terminal %s", id)
	}
	s.terms.remove(id)
	if err := t.close(); err != nil {
		s.log.Warn("terminal: close", "terminal", id, "error", err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// terminalFrame is a text frame of a terminal's socket. From the page: resize, and network
// (the answer to a question: id and allow). To it: exit, once the shell has ended and
// everything it printed was sent; network and network-answered (terminal_asks.go); error,
// for a frame of the page's that was not understood. Output and input travel as binary
// frames.
type terminalFrame struct {
	Type string `json:"type"`
	Rows int    `json:"rows,omitempty"`
	Cols int    `json:"cols,omitempty"`
	ID   string `json:"id,omitempty"`
	// Allow is a pointer: an answer must say yes or no.
	Allow *bool `json:"allow,omitempty"`
}

// terminalError tells a page a frame of its was not taken, and why.
type terminalError struct {
	Type    string `json:"type"` // "error"
	Message string `json:"message"`
}

// terminalSocket attaches a page: it gets the scrollback, then the output as it comes,
// and sends what the person types and the page's size.
func (s *Server) terminalSocket(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	t, ok := s.terms.get(id)
	if !ok {
		return errorf(http.StatusNotFound, codeNotFound, "no open terminal %s", id)
	}
	if !s.conns.add() {
		return errorf(http.StatusServiceUnavailable, codeUnavailable, "the server is shutting down")
	}
	defer s.conns.done()
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return nil // Accept has answered the client
	}
	defer c.CloseNow()
	c.SetReadLimit(64 << 10)
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	page := t.out.attach()
	defer t.out.detach(page)
	t.asks.attach(c)
	defer t.asks.detach(c)
	// A page that goes (or a server that closes) stops waiting for output.
	stop := context.AfterFunc(ctx, func() { t.out.detach(page) })
	defer stop()
	go func() {
		defer cancel()
		s.readTerminalInput(ctx, c, t)
	}()
	s.writeTerminalOutput(ctx, c, t, page)
	return nil
}

// writeTerminalOutput sends the page its output until the shell ends or the page goes.
func (s *Server) writeTerminalOutput(ctx context.Context, c *websocket.Conn, t *liveTerminal, page *termPage) {
	buf := make([]byte, 64<<10)
	for {
		n, exited := t.out.next(page, buf)
		if exited {
			_ = writeFrame(c, terminalFrame{Type: "exit"})
			c.Close(websocket.StatusNormalClosure, "the shell ended")
			return
		}
		if n == 0 {
			if s.ctx.Err() != nil {
				c.Close(websocket.StatusGoingAway, "the server is shutting down")
			}
			return
		}
		wctx, wcancel := context.WithTimeout(ctx, wsWriteTimeout)
		err := c.Write(wctx, websocket.MessageBinary, buf[:n])
		wcancel()
		if err != nil {
			return // a page that takes nothing for wsWriteTimeout no longer holds the shell back
		}
		t.out.sent(page, n)
	}
}

// readTerminalInput writes what the person types to the terminal and takes the page's
// text frames, until the page goes.
func (s *Server) readTerminalInput(ctx context.Context, c *websocket.Conn, t *liveTerminal) {
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			return
		}
		if typ == websocket.MessageBinary {
			if _, err := t.term.Write(data); err != nil {
				return
			}
			continue
		}
		if msg := s.terminalText(t, data); msg != "" {
			// A frame not understood is answered, not fatal: the page and its terminal go on.
			_ = writeFrame(c, terminalError{Type: "error", Message: msg})
		}
	}
}

// terminalText acts on a text frame of the page's: the page's size, or its answer to a
// question about the network. It says what was wrong with a frame it did not take.
func (s *Server) terminalText(t *liveTerminal, data []byte) string {
	var f terminalFrame
	if err := json.Unmarshal(data, &f); err != nil {
		return fmt.Sprintf("a text frame is {\"type\":\"resize\",\"rows\":N,\"cols\":N} or {\"type\":\"network\",\"id\":ID,\"allow\":true|false}: %v", err)
	}
	switch f.Type {
	case "resize":
		size, err := terminalSize(f.Rows, f.Cols)
		if err != nil {
			return err.Error()
		}
		if err := t.term.Resize(size); err != nil {
			s.log.Warn("terminal: resize", "terminal", t.ID, "error", err)
		}
		return ""
	case "network":
		if f.ID == "" || f.Allow == nil {
			return `an answer is {"type":"network","id":ID,"allow":true|false}`
		}
		if !t.asks.answer(f.ID, *f.Allow) {
			return fmt.Sprintf("no question %q waits (answered already, timed out, or never asked)", f.ID)
		}
		return ""
	}
	return fmt.Sprintf("unknown text frame type %q", f.Type)
}

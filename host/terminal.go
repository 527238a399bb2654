package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/jean2/jean2/tool"
)

// TerminalSize is a terminal's size in character cells.
type TerminalSize struct{ Rows, Cols uint16 }

// Terminal is an interactive shell on a pseudo-terminal, confined as the shell's commands
// are. Reads give what the shell prints, writes are what the person types.
type Terminal interface {
	io.ReadWriter
	// Resize sets the pseudo-terminal's size (TIOCSWINSZ); the shell gets SIGWINCH.
	Resize(TerminalSize) error
	// Done is closed when the shell has exited.
	Done() <-chan struct{}
	// Close ends the shell and everything it started (its process group, its pid
	// namespace and cgroups, its egress proxy); safe to call again.
	Close() error
}

// NetworkAsk asks the person at a terminal whether its commands may reach target
// ("host:port", as the egress proxy names it) while the connection waits at the proxy;
// ctx ends when the connection goes away. True lets it through.
type NetworkAsk func(ctx context.Context, target string) bool

// TerminalOpener is a built-in that opens terminals (the shell): the same program, view of
// the machine, rules and egress proxy as its commands, on a pseudo-terminal. The proxy
// allows no host of itself: it puts each target to ask (nil: refused unasked).
type TerminalOpener interface {
	OpenTerminal(ctx context.Context, c *tool.Context, size TerminalSize, ask NetworkAsk) (Terminal, error)
}

// ErrNoTerminal is OpenTerminal's error when no built-in that opens terminals is served.
var ErrNoTerminal = errors.New("no built-in opens terminals (is the shell turned off?)")

// OpenTerminal opens a terminal in workspace ws through the built-in shell. id names the
// terminal as a session: its temporary folder (its HOME and TMPDIR) and its cgroup are a
// session's of that id, in ws, and go when the terminal is closed (EndSession). ask is put
// each host the terminal's commands try to reach (nil: every one is refused).
func (h *Host) OpenTerminal(ctx context.Context, ws Workspace, id string, size TerminalSize, ask NetworkAsk) (Terminal, error) {
	opener, name := h.terminalOpener()
	if opener == nil {
		return nil, ErrNoTerminal
	}
	if ws.Path == "" || ws.ID == "" {
		return nil, fmt.Errorf("terminal %s: the workspace has no id or folder", id)
	}
	call := Call{Tool: name, SessionID: id, Workspace: ws}
	key, err := tempKey(call, "")
	if err != nil {
		return nil, fmt.Errorf("terminal %s: %w", id, err)
	}
	tempDir, err := h.sessionTemp(key)
	if err != nil {
		return nil, fmt.Errorf("terminal %s: its temporary folder: %w", id, err)
	}
	if _, err := h.pinRoots(ws); err != nil {
		return nil, fmt.Errorf("terminal %s: %w", id, err)
	}
	home := h.home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	c := tool.NewContext(tool.Context{
		SessionID: id, WorkspaceID: ws.ID, Workspace: ws.Path,
		AllowedPaths: append([]string(nil), ws.Allowed...), TempDir: tempDir, Home: home,
		Tool: name, Logger: h.log.With("terminal", id, "workspace", ws.ID),
	})
	t, err := opener.OpenTerminal(ctx, c, size, ask)
	if err != nil {
		_ = h.EndSession(context.WithoutCancel(ctx), ws.ID, id)
		return nil, err
	}
	return &hostTerminal{Terminal: t, end: func() error {
		return h.EndSession(context.Background(), ws.ID, id)
	}}, nil
}

// terminalOpener is the served built-in that opens terminals, and its name; nil when it is
// not served (turned off in the settings).
func (h *Host) terminalOpener() (TerminalOpener, string) {
	cat := h.cat.Load()
	for _, t := range h.opts.Builtins {
		o, ok := t.(TerminalOpener)
		if !ok {
			continue
		}
		name := t.Definition().Name
		if _, served := cat.versions[name]; served {
			return o, name
		}
	}
	return nil, ""
}

// hostTerminal removes the terminal's session folder and cgroup once its shell is ended.
type hostTerminal struct {
	Terminal
	once sync.Once
	err  error
	end  func() error
}

func (t *hostTerminal) Close() error {
	t.once.Do(func() { t.err = errors.Join(t.Terminal.Close(), t.end()) })
	return t.err
}

//go:build unix

package builtin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/creack/pty"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/tool"
)

// A terminal is the person's shell on a pseudo-terminal, run exactly as a command of the
// shell tool is (confine): the same view of the machine, rules, limits, environment and
// egress proxy. The proxy allows no host of itself: a grant to the session's commands is
// not a grant to the terminal, and a person at a terminal cannot be asked per command
// prefix. It asks the person at the terminal instead, about each host:port, while the
// connection waits (host.NetworkAsk; the server asks the terminal's pages).

// The refusal advice of a terminal's proxy: how the person at the terminal lets a host
// through.
const (
	terminalRefusedWhy  = "the person at the terminal did not allow it"
	terminalRefusedHint = "; a page of the terminal asks, in a bar above it, when a command first tries a host: Allow lets it through for the terminal's life, Deny (or no answer, or no page open) refuses it; what was denied stays refused until a new terminal is opened"
)

var _ host.TerminalOpener = (*shellTool)(nil)

// OpenTerminal starts the person's shell ($SHELL of the server's environment, else bash)
// in c's workspace. It refuses where commands would run unconfined although the sandbox
// is on: a command would ask the person first, a terminal has no command to ask about.
func (t *shellTool) OpenTerminal(_ context.Context, c *tool.Context, size host.TerminalSize, ask host.NetworkAsk) (host.Terminal, error) {
	why, err := t.sb.unconfined()
	if err != nil {
		return nil, fmt.Errorf("terminal: %w", err)
	}
	if why != "" {
		return nil, fmt.Errorf("terminal: commands would run without the sandbox here (%s); turn the sandbox off to open an unconfined terminal", why)
	}
	prog, err := t.terminalShell()
	if err != nil {
		return nil, err
	}
	cf, err := t.sb.confine(c, prog, []string{"-i"}, c.Workspace, nil, shellNet{ask: ask, why: terminalRefusedWhy, hint: terminalRefusedHint})
	if err != nil {
		return nil, fmt.Errorf("terminal: %w", err)
	}
	cmd := cf.cmd
	// The emulator in the page is xterm.js: it speaks xterm's sequences and 24-bit colour.
	cmd.Env = append(cmd.Env, "TERM=xterm-256color", "COLORTERM=truecolor")
	attrs := cmd.SysProcAttr
	if attrs == nil {
		attrs = &syscall.SysProcAttr{}
	}
	// A session of its own, led by the launcher, with the pseudo-terminal as its controlling
	// terminal: the shell's job control works, and its process group is the launcher's.
	attrs.Setsid, attrs.Setctty, attrs.Setpgid = true, true, false
	f, err := pty.StartWithAttrs(cmd, &pty.Winsize{Rows: size.Rows, Cols: size.Cols}, attrs)
	if err != nil {
		cf.closeNet()
		return nil, fmt.Errorf("terminal: start %s: %w", cmd.Path, err)
	}
	term := &shellTerminal{pty: f, cmd: cmd, cf: cf, done: make(chan struct{})}
	go term.wait()
	return term, nil
}

// terminalShell is the person's login shell as the server's environment names it, when it
// is an absolute path to a program; bash otherwise.
func (t *shellTool) terminalShell() (string, error) {
	environ := t.opts.Environ
	if environ == nil {
		environ = os.Environ()
	}
	if sh := shellLookupEnv(environ, "SHELL"); filepath.IsAbs(sh) {
		if fi, err := os.Stat(sh); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return sh, nil
		}
	}
	return t.opts.resolveBash()
}

// shellTerminal is one running terminal.
type shellTerminal struct {
	pty  *os.File
	cmd  *exec.Cmd
	cf   *shellConfined
	done chan struct{}
	once sync.Once
}

var _ host.Terminal = (*shellTerminal)(nil)

// wait reaps the shell; what it left in its group and cgroups ends with it (in a pid
// namespace its init's end has ended the rest already).
func (t *shellTerminal) wait() {
	_ = t.cmd.Wait()
	shellKillGroup(t.cmd)
	t.cf.release()
	t.cf.closeNet()
	close(t.done)
}

func (t *shellTerminal) Read(p []byte) (int, error)  { return t.pty.Read(p) }
func (t *shellTerminal) Write(p []byte) (int, error) { return t.pty.Write(p) }
func (t *shellTerminal) Done() <-chan struct{}       { return t.done }

func (t *shellTerminal) Resize(size host.TerminalSize) error {
	if err := pty.Setsize(t.pty, &pty.Winsize{Rows: size.Rows, Cols: size.Cols}); err != nil {
		return fmt.Errorf("terminal: resize to %dx%d: %w", size.Cols, size.Rows, err)
	}
	return nil
}

// Close kills the shell's process group (the launcher leads it; as a pid namespace's init
// its death ends every process of the namespace) and its cgroups, waits for it to be
// reaped, then closes the pseudo-terminal.
func (t *shellTerminal) Close() error {
	t.once.Do(func() {
		shellKillGroup(t.cmd)
		t.cf.release()
		<-t.done
		_ = t.pty.Close()
	})
	return nil
}

package builtin

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/jean2/jean2/sandbox"
	"github.com/jean2/jean2/sandbox/egress"
)

// A command's only way to the network is its exit: a network namespace of its own whose
// loopback holds an egress proxy that allows what the command may reach (sandbox.Exit).
// Making a namespace and tearing it down costs more than the rest of the host's work for a
// command, so the exit of a command that has ended serves the session's next command:
//
//   - only once nothing of the command is left in it: the command ran in a pid namespace
//     of its own, and the host reaped its init (the kernel ends every other process of the
//     namespace before that), or it never started;
//   - only for the same session (a person's grants are per session and command prefix; one
//     session's commands see nothing of another's);
//   - never for two commands at once: a command takes an idle exit or makes one, so a
//     background command and the next foreground one have exits of their own;
//   - the proxy answers for one command at a time: what it allows and where its refusals
//     go are the current command's (use), set before the command starts.
//
// A command cannot leave anything behind in the namespace that outlives its processes: it
// holds no capability (routes, firewall rules and the namespace's sysctls need
// CAP_NET_ADMIN), cannot make a namespace of its own, and its sockets close with it. Idle
// exits close after shellExitIdle, when the session ends, or when the shell closes. Where
// there is no pid namespace (a process that left the command's group may live on) or no
// network namespace (the proxy on the host's loopback), every command has a new exit.

// shellExitIdle is how long an exit waits for the session's next command.
const shellExitIdle = 2 * time.Minute

// shellIdleExits caps a session's idle exits (its background commands each hold one while
// they run; once they end, a few suffice for what comes next).
const shellIdleExits = 2

// shellExits keeps the idle exits of each session.
type shellExits struct {
	mu     sync.Mutex
	idle   map[string][]*shellExit // by session
	closed bool
}

// shellExit is one exit and the command it currently serves.
type shellExit struct {
	exit     *sandbox.Exit
	session  string
	reusable bool // in a network namespace of its own (a port on the host's loopback is not kept)

	mu      sync.Mutex
	net     shellNet
	refused *shellRefusals
	timer   *time.Timer // while idle
}

// shellNet is what the command an exit serves may reach, and who is asked about the rest.
type shellNet struct {
	allowed []string
	// ask asks the person, while the connection waits at the proxy, for a target allowed
	// does not name (nil: refused unasked).
	ask func(ctx context.Context, target string) bool
	// why and hint say, in a refusal, why the target was not reached and how a person lets
	// it through (the hint starts with "; "); empty: the shell tool's (its call's list).
	why, hint string
}

// The shell tool's refusal advice: a command reaches what its call names and the person
// allowed.
const (
	shellRefusedWhy  = "the shell was not allowed to reach it for this command"
	shellRefusedHint = `; name it in the call's "network" list: the person is asked once per command prefix and session`
)

// open returns an exit for a command of session that may reach what net allows (and what
// its ask allows while it runs), its refusals collected in refused: an idle one of the
// session's when inNS, else a new one.
func (e *shellExits) open(session string, inNS bool, net shellNet, refused *shellRefusals) (*shellExit, error) {
	if inNS {
		if x := e.take(session); x != nil {
			x.use(net, refused)
			return x, nil
		}
	}
	x := &shellExit{session: session, reusable: inNS}
	x.use(net, refused)
	proxy := &egress.Proxy{Tool: "shell", Allowed: x.allowedNow, Ask: x.askNow,
		Log: slog.New(shellExitLog{x}), Advice: x.advice}
	// Under Seatbelt the proxy listens on the host's loopback and the profile allows only
	// its port; under Landlock it is in the command's namespace where there is one.
	exit, err := sandbox.OpenExit(proxy, inNS)
	if err != nil {
		return nil, err
	}
	x.exit = exit
	return x, nil
}

// use makes the exit answer for the command that may reach net.
func (x *shellExit) use(net shellNet, refused *shellRefusals) {
	net.allowed = slices.Clone(net.allowed)
	x.mu.Lock()
	x.net, x.refused = net, refused
	x.mu.Unlock()
}

// advice is the refusal's why and hint for the command the exit serves.
func (x *shellExit) advice(string, int) (string, string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.net.why == "" {
		return shellRefusedWhy, shellRefusedHint
	}
	return x.net.why, x.net.hint
}

func (x *shellExit) allowedNow() []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return slices.Clone(x.net.allowed)
}

// askNow asks the person for a target of the command the exit serves; a yes lets it
// through for the rest of the command.
func (x *shellExit) askNow(ctx context.Context, target string) bool {
	x.mu.Lock()
	ask := x.net.ask
	x.mu.Unlock()
	if ask == nil || !ask(ctx, target) {
		return false
	}
	x.mu.Lock()
	x.net.allowed = append(x.net.allowed, target)
	x.mu.Unlock()
	return true
}

// take removes an idle exit of session from the pool (nil when there is none).
func (e *shellExits) take(session string) *shellExit {
	e.mu.Lock()
	defer e.mu.Unlock()
	list := e.idle[session]
	if len(list) == 0 {
		return nil
	}
	x := list[len(list)-1]
	e.idle[session] = list[:len(list)-1]
	if len(e.idle[session]) == 0 {
		delete(e.idle, session)
	}
	x.timer.Stop()
	return x
}

// done is the end of a command's use of x: kept for the session's next command when clean
// (nothing of the command can be left in it), else closed.
func (e *shellExits) done(x *shellExit, clean bool) {
	if x == nil {
		return
	}
	x.use(shellNet{}, nil)
	e.mu.Lock()
	if !clean || !x.reusable || e.closed || len(e.idle[x.session]) >= shellIdleExits {
		e.mu.Unlock()
		x.exit.Close()
		return
	}
	if e.idle == nil {
		e.idle = map[string][]*shellExit{}
	}
	e.idle[x.session] = append(e.idle[x.session], x)
	x.timer = time.AfterFunc(shellExitIdle, func() { e.expire(x) })
	e.mu.Unlock()
}

// expire closes x if it is still idle.
func (e *shellExits) expire(x *shellExit) {
	e.mu.Lock()
	list := e.idle[x.session]
	for i, y := range list {
		if y == x {
			e.idle[x.session] = append(list[:i:i], list[i+1:]...)
			if len(e.idle[x.session]) == 0 {
				delete(e.idle, x.session)
			}
			e.mu.Unlock()
			x.exit.Close()
			return
		}
	}
	e.mu.Unlock()
}

// endSession closes the session's idle exits.
func (e *shellExits) endSession(session string) {
	e.mu.Lock()
	list := e.idle[session]
	delete(e.idle, session)
	e.mu.Unlock()
	for _, x := range list {
		x.timer.Stop()
		x.exit.Close()
	}
}

// close closes every idle exit; exits in use close when their commands end.
func (e *shellExits) close() {
	e.mu.Lock()
	idle := e.idle
	e.idle, e.closed = nil, true
	e.mu.Unlock()
	for _, list := range idle {
		for _, x := range list {
			x.timer.Stop()
			x.exit.Close()
		}
	}
}

// shellExitLog passes the proxy's refusals to the command the exit serves (none between
// commands: nothing of the last one is left to be refused).
type shellExitLog struct{ x *shellExit }

func (l shellExitLog) Enabled(context.Context, slog.Level) bool { return true }
func (l shellExitLog) Handle(ctx context.Context, rec slog.Record) error {
	l.x.mu.Lock()
	r := l.x.refused
	l.x.mu.Unlock()
	if r == nil {
		return nil
	}
	return r.Handle(ctx, rec)
}
func (l shellExitLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l shellExitLog) WithGroup(string) slog.Handler      { return l }

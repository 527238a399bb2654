package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/internal/fsutil"
	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/sandbox/egress"
	"github.com/jean2/jean2/tool"
)

// ShellOptions configure the shell built-in. Sandbox, Limits and Layout are the host's own
// (cmd/jean2 passes the values it gives host.Options), so a command is confined exactly as
// the host confines its workers.
type ShellOptions struct {
	// Sandbox is the host's sandbox mode and launcher. Mode off runs commands unconfined
	// (still with a clean environment, a timeout and the whole group ended); any other mode
	// confines them through the launcher, with Landlock on Linux and Seatbelt on macOS
	// (where neither can be had, auto asks the person before each command prefix and
	// landlock or require refuse to run).
	Sandbox host.SandboxOptions
	// Limits caps a command and everything it starts: memory (a memory cgroup over the
	// whole command), tasks (a pids cgroup) and file size. Zero fields take the shell's
	// defaults (ShellMemoryMB, ShellMaxTasks, host.DefaultMaxFileMB); negative ones none.
	// Served by a host with cgroups, each command's groups lie in its session's group,
	// whose limits (host.Limits.SessionMemoryMB, SessionMaxTasks) hold for all the
	// session's commands together, background ones included.
	Limits host.Limits
	// Layout is the host's: its Home and Tools are never readable by a command.
	Layout host.Layout
	// Protected are more paths no command may reach (beside Layout's, the user's
	// credential folders and the machine's own secrets in /etc).
	Protected []string
	// PassEnv names variables of the server's environment that commands receive, and Env
	// sets more (it wins over PassEnv). Never passed, even named: jean2's own (JEAN2_*),
	// the model providers' keys (the built-in names and those providers.json names), the
	// loader's (LD_*, DYLD_*), and the ones jean2 sets itself (PATH, HOME, TMPDIR, the
	// caches, GIT_CONFIG_GLOBAL). Environ is the server's environment (nil: os.Environ()),
	// which also gives the commands' PATH and the person's Go and git settings.
	PassEnv []string
	Env     map[string]string
	Environ []string
	// ReadOnly are more folders commands may read and execute, beside the toolchains
	// found on PATH and in the usual places (~/.cargo, ~/go, ~/.nvm, ~/.pyenv …, see
	// shellToolchains). Protected places inside them stay closed.
	ReadOnly []string
	// Path is the commands' PATH ("": the server's, else the usual system folders).
	Path string
	// GitName and GitEmail are the identity git uses in commands ("": the person's
	// `git config --global user.name` / `user.email`).
	GitName, GitEmail string
	// Bash is the shell to run ("": /bin/bash or bash on PATH).
	Bash string
	// Timeout is a command's time when the call gives none (default 2 minutes);
	// MaxTimeout caps what a call may ask (default 10 minutes).
	Timeout, MaxTimeout time.Duration
	// MaxOutput caps what the model sees of each of stdout and stderr, head and tail
	// (default 30,000 bytes); the whole stream (up to 16 MiB) goes to a file in the
	// session's folder.
	MaxOutput int
}

// Shell defaults beyond the host's: a command (a build, a test run) is a tree of processes,
// so it gets more than one worker.
const (
	ShellMemoryMB       = 2048
	ShellMaxTasks       = 1024
	DefaultShellTimeout = 2 * time.Minute
	MaxShellTimeout     = 10 * time.Minute
	DefaultShellOutput  = 30_000
	shellSpillCap       = 16 << 20
	shellProgressCap    = 1 << 20 // bytes of output streamed as progress per call
)

type shellInput struct {
	Command string   `json:"command"`
	Cwd     string   `json:"cwd,omitempty"`
	Timeout float64  `json:"timeout,omitempty"`
	Network []string `json:"network,omitempty"`
	Write   []string `json:"write,omitempty"`
	// Background starts the command and returns at once (a dev server); Stop ends one.
	Background bool   `json:"background,omitempty"`
	Stop       string `json:"stop,omitempty"`
}

// shellResult is the catalogue's {stdout, stderr, exitCode} with what a confined run adds.
type shellResult struct {
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	ExitCode int    `json:"exitCode"`
	TimedOut bool   `json:"timedOut,omitempty"`
	// Overflow names the files holding a stream whole when the text above was cut.
	Overflow map[string]string `json:"overflow,omitempty"`
	// NetworkRefused are destinations the sandbox refused and no one allowed.
	NetworkRefused []string `json:"networkRefused,omitempty"`
	// NetworkAllowed are destinations a person allowed while the command ran (the
	// connection waited for the answer; the command ran once).
	NetworkAllowed []string `json:"networkAllowed,omitempty"`
	// Background describes a command started (or stopped) in the background.
	Background *shellBackgroundInfo `json:"background,omitempty"`
}

const shellSchema = `{
  "type": "object",
  "properties": {
    "command": {"type": "string", "description": "The shell command to execute"},
    "cwd": {"type": "string", "description": "Working directory for the command"},
    "timeout": {"type": "number", "description": "Timeout in milliseconds (default 120000, max 600000); the command and everything it started are killed when it runs out"},
    "network": {"type": "array", "items": {"type": "string"}, "description": "Hosts the command needs to reach (e.g. registry.npmjs.org, api.github.com:443); commands have no network otherwise. The person is asked once per command prefix and host for the session"},
    "write": {"type": "array", "items": {"type": "string"}, "description": "Paths outside the workspace the command needs to write; the person is asked"},
    "background": {"type": "boolean", "description": "Start the command in the background (a dev server, a watcher) and return at once with its id and the file its output goes to"},
    "stop": {"type": "string", "description": "Stop the background command with this id (command is then ignored) and return the end of its output"}
  },
  "required": ["command"]
}`

const shellDescription = `Execute a shell command (bash) in the workspace.

This tool is for terminal operations (package managers, build tools, tests, git). DO NOT use it for file operations - use specialized tools instead (read-file, edit, write-file, glob, grep).

## Sandbox

Commands run confined, without asking: they read the system and the workspace, write only in the workspace and the session's temporary folder ($TMPDIR, also $HOME), have no network, and see a clean environment. When a command needs more:
- network: list the hosts in "network" (e.g. ["registry.npmjs.org"]); a connection to a host not listed waits while the person is asked, and goes through if allowed
- writing outside the workspace: list the paths in "write"
The person is asked once; grants are remembered per command prefix ("npm install", "git push") for the session.

## Usage

- The cwd parameter sets the working directory (inside the workspace)
- Commands time out after 2 minutes by default ("timeout" in milliseconds, up to 10 minutes); the command and everything it started are then killed
- Background processes of a command end with it; to keep one running (a dev server), set "background": true, read its output file, and stop it with {"stop": id}
- Long output is cut to its beginning and end; the whole output is in the file named in "overflow"`

type shellTool struct {
	def  tool.Definition
	opts ShellOptions
	sb   *shellSandbox

	mu      sync.Mutex
	granted map[string][]string  // session + "\x00" + command prefix → hosts allowed
	jobs    map[string]*shellJob // background commands by id
	seq     int
}

// Shell returns the shell built-in.
func Shell(opts ShellOptions) tool.Tool {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		} else if *v < 0 {
			*v = 0
		}
	}
	def(&opts.Limits.MemoryMB, ShellMemoryMB)
	def(&opts.Limits.MaxTasks, ShellMaxTasks)
	def(&opts.Limits.MaxFileMB, host.DefaultMaxFileMB)
	def(&opts.MaxOutput, DefaultShellOutput)
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultShellTimeout
	}
	if opts.MaxTimeout <= 0 {
		opts.MaxTimeout = MaxShellTimeout
	}
	t := &shellTool{opts: opts, granted: map[string][]string{}, jobs: map[string]*shellJob{}}
	t.sb = &shellSandbox{opts: &t.opts}
	t.def = tool.Definition{
		Name:        "shell",
		Description: shellDescription,
		InputSchema: json.RawMessage(shellSchema),
		// The host's own deadline stays above the longest command a call may ask for, so the
		// shell's timeout (which reports what ran) is what ends a command.
		Timeout: int((opts.MaxTimeout + time.Minute) / time.Millisecond),
	}
	return t
}

func (t *shellTool) Definition() tool.Definition { return t.def }

// Close ends what is left of the commands and removes the shell's cgroup folders (a host
// that closes its built-ins calls it; otherwise the next jean2 to start sweeps them).
func (t *shellTool) Close() error {
	t.stopAll(context.Background())
	t.sb.exits.close()
	t.sb.once.Do(func() {}) // a shell that never ran made nothing
	return t.sb.close()
}

func (t *shellTool) Execute(ctx context.Context, c *tool.Context, args json.RawMessage) tool.Result {
	var in shellInput
	if err := json.Unmarshal(args, &in); err != nil {
		return tool.Errorf("invalid arguments for shell: %v", err)
	}
	if in.Stop != "" {
		return t.stopBackground(c, in.Stop)
	}
	command := strings.TrimSpace(in.Command)
	if command == "" {
		return tool.Errorf("EMPTY_COMMAND: shell tool requires a non-empty command")
	}
	cwd, err := shellCwd(c, in.Cwd)
	if err != nil {
		return tool.Result{Error: err.Error()}
	}
	timeout := t.opts.Timeout
	if in.Timeout > 0 {
		timeout = min(time.Duration(in.Timeout*float64(time.Millisecond)), t.opts.MaxTimeout)
	}
	bash, err := t.opts.resolveBash()
	if err != nil {
		return tool.Result{Error: err.Error()}
	}
	prefix := shellCommandPrefix(command)

	network, writable, err := t.confine(ctx, c, command, prefix, in)
	if err != nil {
		return tool.Result{Error: err.Error()}
	}

	if in.Background {
		return t.startBackground(c, bash, command, cwd, network, writable)
	}
	asks := &shellNetworkAsks{t: t, c: c, ctx: ctx, command: command, prefix: prefix, decided: map[string]bool{}}
	run, err := t.run(ctx, c, bash, command, cwd, timeout, network, writable, asks)
	if err != nil {
		return tool.Result{Error: err.Error()}
	}
	var refused []string
	for _, target := range run.refused {
		if !slices.Contains(network, target) && !slices.Contains(asks.allowed, target) {
			refused = append(refused, target)
		}
	}
	return t.result(c, command, run, refused, asks.allowed, timeout)
}

// shellCwd is where a command runs: the workspace, or a folder in it, in its allowed paths
// or in the session's folder.
func shellCwd(c *tool.Context, asked string) (string, error) {
	if asked == "" {
		return c.Workspace, nil
	}
	cwd := c.ResolvePath(asked)
	if !c.IsWithinWorkspace(cwd) && !policy.Within(policy.Real(cwd), policy.Real(c.TempDir)) {
		return "", fmt.Errorf("cwd %s lies outside the workspace: commands run in the workspace, its allowed paths or the session's folder", cwd)
	}
	if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("cwd %s is not a folder", cwd)
	}
	return cwd, nil
}

// confine decides how a command runs. Confined, it gets the network hosts and writable
// paths the call asked for and the person allowed; where the sandbox cannot confine it, the
// premise of running without asking is gone, so the person is asked to run it unconfined.
func (t *shellTool) confine(ctx context.Context, c *tool.Context, command, prefix string, in shellInput) (network, writable []string, err error) {
	why, err := t.sb.unconfined()
	if err != nil {
		return nil, nil, err
	}
	if why == "" {
		if network, err = t.network(ctx, c, command, prefix, in.Network); err != nil {
			return nil, nil, err
		}
		if writable, err = t.writable(ctx, c, command, in.Write); err != nil {
			return nil, nil, err
		}
		return network, writable, nil
	}
	meta, _ := json.Marshal(map[string]any{"permissionKey": "shell:unconfined", "command": command, "commandPrefix": prefix})
	ok, err := shellAskBool(ctx, c, tool.Ask{
		Type:        tool.AskPermission,
		Question:    fmt.Sprintf("Run `%s` without the sandbox?", command),
		Description: fmt.Sprintf("Commands normally run confined (workspace only, no network), but %s: this one could read, write and reach whatever you can. A grant for the session covers every command that starts with `%s`.", why, prefix),
		Risk:        "high",
		Resource:    "shell",
		Patterns:    []string{"shell-unconfined:" + prefix},
		Duration:    tool.DurationSession,
		Metadata:    meta,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("ask to run `%s` unconfined: %v", command, err)
	}
	if !ok {
		return nil, nil, fmt.Errorf("%s: the person did not allow `%s` to run without the sandbox (%s)", tool.UserRejection, command, why)
	}
	return nil, nil, nil
}

// shellNetworkAsks asks the person about the targets the proxy would refuse a running
// command, while its connection waits: the command is not run again after the answer, so
// what it did before connecting (`echo run >> count.txt; curl …`) happens once.
type shellNetworkAsks struct {
	t               *shellTool
	c               *tool.Context
	ctx             context.Context // the call's
	command, prefix string
	mu              sync.Mutex // one ask at a time; a target is asked once per run
	decided         map[string]bool
	allowed         []string
}

// ask answers the proxy for one held connection; ctx ends when its client goes away.
func (a *shellNetworkAsks) ask(ctx context.Context, target string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ok, seen := a.decided[target]; seen {
		return ok
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(a.ctx, cancel)()
	ok, err := a.t.askNetwork(ctx, a.c, a.command, a.prefix, target, true)
	if err != nil {
		// No one to ask (or the call ended): refused, as without asking.
		a.c.Logger.Warn("shell: network ask failed", "command", a.command, "target", target, "err", err)
	}
	a.decided[target] = ok
	if ok {
		a.allowed = append(a.allowed, target)
		a.t.remember(a.c, a.prefix, []string{target})
	}
	return ok
}

// list is what the person allowed so far.
func (a *shellNetworkAsks) list() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.allowed)
}

// commandPrefix is what a grant is remembered for: the program and its subcommand ("npm
// test", "git push"), or the program alone when the second word is a flag, a path or
// absent. Leading variable assignments are skipped; a path to the program counts by its
// base name. A command of several (a list, a pipeline, a substitution) is its own prefix,
// whole: the program that needs the network may be any of them, and a grant asked as
// "allow `ls` to reach example.com" for `ls; curl example.com` would name the wrong one.
func shellCommandPrefix(command string) string {
	if strings.ContainsAny(command, ";&|\n`") || strings.Contains(command, "$(") {
		return strings.Join(strings.Fields(command), " ")
	}
	words := strings.Fields(command)
	for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "=") {
		words = words[1:]
	}
	if len(words) == 0 {
		return ""
	}
	prog := filepath.Base(words[0])
	if len(words) == 1 {
		return prog
	}
	sub := words[1]
	if strings.HasPrefix(sub, "-") || strings.ContainsAny(sub, "/.|&;<>()$`'\"*?=") {
		return prog
	}
	return prog + " " + sub
}

// shellGrantCovers says in an ask what a grant for the session will cover.
func shellGrantCovers(command, prefix string) string {
	if prefix == strings.Join(strings.Fields(command), " ") && strings.ContainsAny(prefix, ";&|\n`$") {
		return " A grant for the session covers this command line when it runs again."
	}
	return fmt.Sprintf(" A grant for the session covers every command that starts with `%s`.", prefix)
}

func shellGrantKey(c *tool.Context, prefix string) string {
	return c.SessionID + "\x00" + prefix
}

func (t *shellTool) remember(c *tool.Context, prefix string, hosts []string) {
	if c.SessionID == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	k := shellGrantKey(c, prefix)
	for _, h := range hosts {
		if !slices.Contains(t.granted[k], h) {
			t.granted[k] = append(t.granted[k], h)
		}
	}
}

func (t *shellTool) forget(c *tool.Context, prefix, host string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := shellGrantKey(c, prefix)
	t.granted[k] = slices.DeleteFunc(t.granted[k], func(h string) bool { return h == host })
	if len(t.granted[k]) == 0 {
		delete(t.granted, k)
	}
}

// network is what the command's proxy allows: the hosts the call names and those the
// session allowed this command prefix before, each granted by a person. The host's broker
// remembers grants: a host allowed for the session is not asked again; one allowed once is.
func (t *shellTool) network(ctx context.Context, c *tool.Context, command, prefix string, named []string) ([]string, error) {
	t.mu.Lock()
	remembered := slices.Clone(t.granted[shellGrantKey(c, prefix)])
	t.mu.Unlock()
	want := slices.Clone(remembered)
	for _, n := range named {
		n = strings.TrimSpace(n)
		if _, err := egress.ParseRule(n); err != nil {
			return nil, fmt.Errorf("network: %w", err)
		}
		if !slices.Contains(want, n) {
			want = append(want, n)
		}
	}
	var out []string
	for _, target := range want {
		ok, err := t.askNetwork(ctx, c, command, prefix, target, false)
		if err != nil {
			return nil, fmt.Errorf("ask for the network of `%s` (%s): %w", command, target, err)
		}
		if !ok {
			if slices.Contains(named, target) {
				return nil, fmt.Errorf("%s: the person did not allow `%s` to reach %s", tool.UserRejection, prefix, target)
			}
			// Allowed once before and refused now: the command runs without it.
			t.forget(c, prefix, target)
			continue
		}
		out = append(out, target)
	}
	if len(out) > 0 {
		t.remember(c, prefix, out)
	}
	return out, nil
}

// askNetwork asks for target; held says a running command's connection waits on the answer.
func (t *shellTool) askNetwork(ctx context.Context, c *tool.Context, command, prefix, target string, held bool) (bool, error) {
	meta, _ := json.Marshal(map[string]any{
		"permissionKey": "shell:network", "command": command, "commandPrefix": prefix, "host": target,
	})
	desc := fmt.Sprintf("Commands run without network. `%s` needs %s.", command, target)
	if held {
		desc = fmt.Sprintf("`%s` is running and connects to %s; the connection waits for your answer (the command is not run again).", command, target)
	}
	risk := "medium"
	if special := networkSpecial(target); special != "" {
		// The proxy lets a name reach public addresses only; an entry that names this
		// machine, its networks or a range is a person's to grant, never medium's.
		risk = "high"
		desc += fmt.Sprintf(" %s is %s, this machine or a network around it: services there are not meant for the web.", target, special)
	}
	a := tool.Ask{
		Type:        tool.AskPermission,
		Question:    fmt.Sprintf("Allow `%s` to reach %s?", prefix, target),
		Description: desc + shellGrantCovers(command, prefix),
		Risk:        risk,
		Resource:    "network",
		Patterns:    []string{"shell-network:" + prefix + " → " + target},
		Duration:    tool.DurationSession,
		Metadata:    meta,
	}
	return shellAskBool(ctx, c, a)
}

// networkSpecial says what a network entry (egress's syntax) reaches when it is more than a
// name: localhost, an address the egress rules call special (loopback, private, link-local,
// this machine's own, CGNAT, NAT64, reserved …) or a range of addresses; "" for a name, "*"
// (public addresses only) or one public address.
func networkSpecial(target string) string {
	r, err := egress.ParseRule(target)
	switch {
	case err != nil:
		return ""
	case len(r.Local) > 0:
		return "localhost"
	case !r.Prefix.IsValid():
		return ""
	case !r.Prefix.IsSingleIP():
		return "a range of addresses"
	}
	return egress.Special(r.Prefix.Addr(), egress.OwnAddrs())
}

// writable asks for the paths outside the workspace the command needs to write; each is
// granted by path (the host's grants cover it for the duration the person chose).
func (t *shellTool) writable(ctx context.Context, c *tool.Context, command string, paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		abs := c.ResolvePath(p)
		if c.IsWithinWorkspace(abs) {
			continue
		}
		if c.IsBlockedPath(abs) {
			return nil, fmt.Errorf("write %s: a system path no command may write", abs)
		}
		for _, prot := range t.opts.protected(c.Home, runtime.GOOS) {
			if policy.Within(policy.Real(abs), policy.Real(prot)) || policy.Within(policy.Real(prot), policy.Real(abs)) {
				return nil, fmt.Errorf("write %s: it is or holds a place no command may touch (%s)", abs, prot)
			}
		}
		meta, _ := json.Marshal(map[string]any{"permissionKey": "shell:write", "command": command, "access": "write", "path": abs})
		ok, err := shellAskBool(ctx, c, tool.Ask{
			Type:        tool.AskPermission,
			Question:    fmt.Sprintf("Allow `%s` to write %s?", command, abs),
			Description: "Commands write only in the workspace and the session's folder; this one asks to write outside.",
			Risk:        "high",
			Resource:    "file",
			Paths:       []string{abs},
			Duration:    tool.DurationSession,
			Metadata:    meta,
		})
		if err != nil {
			return nil, fmt.Errorf("ask to write %s for `%s`: %w", abs, command, err)
		}
		if !ok {
			return nil, fmt.Errorf("%s: the person did not allow `%s` to write %s", tool.UserRejection, command, abs)
		}
		out = append(out, abs)
	}
	return out, nil
}

func shellAskBool(ctx context.Context, c *tool.Context, a tool.Ask) (bool, error) {
	raw, err := c.Asker.Ask(ctx, a)
	if err != nil {
		return false, err
	}
	var ok bool
	if err := json.Unmarshal(raw, &ok); err != nil {
		return false, fmt.Errorf("permission answer %s is not a boolean", raw)
	}
	return ok, nil
}

// shellRun is what came of one run.
type shellRun struct {
	stdout, stderr *shellCapped
	code           int
	timedOut       bool
	stopped        bool
	refused        []string
}

// run starts the command and waits for it, its output streamed as progress. When it ends,
// runs out of time or the call is stopped, its process group and cgroup are ended: nothing
// it started outlives it. asks answers the connections the proxy would refuse; the time a
// person takes to answer does not count toward timeout.
func (t *shellTool) run(ctx context.Context, c *tool.Context, bash, command, cwd string, timeout time.Duration, network, writable []string, asks *shellNetworkAsks) (*shellRun, error) {
	holds := make(chan bool)
	exited, watched := make(chan struct{}), make(chan struct{})
	hold := func(on bool) {
		select {
		case holds <- on:
		case <-watched:
		}
	}
	ask := func(ctx context.Context, target string) bool {
		hold(true)
		defer hold(false)
		return asks.ask(ctx, target)
	}
	cf, err := t.sb.command(c, bash, command, cwd, network, writable, ask)
	if err != nil {
		return nil, err
	}
	defer cf.closeNet()
	r := &shellRun{stdout: newShellCapped(t.opts.MaxOutput, shellSpillCap), stderr: newShellCapped(t.opts.MaxOutput, shellSpillCap)}
	prog := &shellProgressSink{c: c, left: shellProgressCap}
	cmd := cf.cmd
	outR, errR, err := shellStart(cmd)
	if err != nil {
		return nil, err
	}
	var readers sync.WaitGroup
	copyStream := func(dst *shellCapped, src *os.File, stream string) {
		defer readers.Done()
		_, _ = io.Copy(io.MultiWriter(dst, prog.stream(stream)), src)
	}
	readers.Add(2)
	go copyStream(r.stdout, outR, "stdout")
	go copyStream(r.stderr, errR, "stderr")

	go func() {
		defer close(watched)
		if shellWatch(ctx, exited, holds, timeout, r) {
			shellKillGroup(cmd)
			cf.release()
		}
	}()
	werr := cmd.Wait()
	close(exited)
	<-watched
	// Whatever bash left behind (a `cmd &`) ends with it; its pipes then close.
	shellKillGroup(cmd)
	cf.release()
	shellDrain(&readers, outR, errR)
	r.code = shellExitCode(cmd, werr)
	r.refused = cf.refused.list()
	return r, nil
}

// shellStart starts cmd with stdin from /dev/null and its own process group, its output
// to two pipes whose read ends it returns; the write ends are closed here so the reads end
// when the last process holding them does.
func shellStart(cmd *exec.Cmd) (outR, errR *os.File, err error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("shell: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, nil, fmt.Errorf("shell: %w", err)
	}
	cmd.Stdin = nil // /dev/null
	cmd.Stdout, cmd.Stderr = outW, errW
	shellOwnGroup(cmd)
	if err := cmd.Start(); err != nil {
		outR.Close()
		outW.Close()
		errR.Close()
		errW.Close()
		return nil, nil, fmt.Errorf("shell: start %s: %w", cmd.Path, err)
	}
	outW.Close()
	errW.Close()
	return outR, errR, nil
}

// shellDrain waits for the output readers, then closes the pipes. A process that escaped
// both the group and a cgroup (no cgroup here) holds the pipes: after two seconds the
// reading stops rather than wait for it.
func shellDrain(readers *sync.WaitGroup, outR, errR *os.File) {
	done := make(chan struct{})
	go func() { readers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		outR.Close()
		errR.Close()
		<-done
	}
	outR.Close()
	errR.Close()
}

// shellWatch waits for the command to exit (false), or to run out of time or be stopped
// (true, with r saying which). The clock stops while a person is asked (holds).
func shellWatch(ctx context.Context, exited <-chan struct{}, holds <-chan bool, timeout time.Duration, r *shellRun) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	deadline, held, left := time.Now().Add(timeout), 0, timeout
	for {
		select {
		case <-exited:
			return false
		case <-timer.C:
			r.timedOut = true
			return true
		case <-ctx.Done():
			r.stopped = true
			return true
		case on := <-holds:
			switch {
			case on && held == 0:
				timer.Stop()
				left = time.Until(deadline)
				held++
			case on:
				held++
			case held == 1:
				held = 0
				deadline = time.Now().Add(left)
				timer.Reset(left)
			default:
				held--
			}
		}
	}
}

func shellExitCode(cmd *exec.Cmd, err error) int {
	st := cmd.ProcessState
	if st == nil {
		return -1
	}
	if code := st.ExitCode(); code >= 0 {
		return code
	}
	if sig, ok := shellSignal(st); ok {
		return 128 + sig
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// progressSink streams output as progress reports, up to a cap for the call.
type shellProgressSink struct {
	c    *tool.Context
	mu   sync.Mutex
	left int
}

type shellProgressStream struct {
	p    *shellProgressSink
	name string
}

func (p *shellProgressSink) stream(name string) io.Writer { return shellProgressStream{p, name} }

func (s shellProgressStream) Write(b []byte) (int, error) {
	s.p.mu.Lock()
	n := min(len(b), s.p.left)
	s.p.left -= n
	s.p.mu.Unlock()
	if n > 0 {
		data, _ := json.Marshal(map[string]string{"stream": s.name})
		s.p.c.Progress(tool.Progress{Message: string(b[:n]), Data: data})
	}
	return len(b), nil
}

func (t *shellTool) result(c *tool.Context, command string, run *shellRun, refused, allowed []string, timeout time.Duration) tool.Result {
	res := shellResult{ExitCode: run.code, TimedOut: run.timedOut, NetworkRefused: refused, NetworkAllowed: allowed}
	for _, s := range []struct {
		name string
		out  *shellCapped
		text *string
	}{{"stdout", run.stdout, &res.Stdout}, {"stderr", run.stderr, &res.Stderr}} {
		note := ""
		if s.out.truncated() {
			data, whole := s.out.all()
			path, err := fsutil.WriteNew(c.TempDir, ".", "shell-"+s.name+"-", ".txt", data, 0o600)
			switch {
			case err != nil:
				note = "; the whole output could not be kept: " + err.Error()
			case whole:
				note = "; the whole " + s.name + " is in " + path
			default:
				note = fmt.Sprintf("; the first %d bytes of %s are in %s", len(data), s.name, path)
			}
			if err == nil {
				if res.Overflow == nil {
					res.Overflow = map[string]string{}
				}
				res.Overflow[s.name] = path
			}
		}
		*s.text = s.out.text(note)
	}
	vz := map[string]any{"type": tool.VizShellOutput, "command": shellTruncate(command, 100), "exitCode": res.ExitCode}
	if res.Stdout != "" {
		vz["stdout"] = res.Stdout
	}
	if res.Stderr != "" {
		vz["stderr"] = res.Stderr
	}
	viz, _ := json.Marshal(vz)
	out := tool.Success(res)
	out.Visualization = viz
	switch {
	case run.stopped:
		out.Success, out.Error = false, "Tool execution interrupted"
	case run.timedOut:
		out.Success, out.Error = false, fmt.Sprintf("Command timed out after %s; it and everything it started were killed", timeout)
	case res.ExitCode != 0:
		out.Success = false
		out.Error = fmt.Sprintf("Command exited with code %d", res.ExitCode)
		if first, _, _ := strings.Cut(strings.TrimSpace(res.Stderr), "\n"); first != "" {
			out.Error += ": " + first
		}
	}
	if len(refused) > 0 && !out.Success {
		out.Error += fmt.Sprintf(" (the sandbox refused the network to %s, and no one allowed it while the command ran; name it in \"network\" to ask before the command runs)", strings.Join(refused, ", "))
	}
	return out
}

func shellTruncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

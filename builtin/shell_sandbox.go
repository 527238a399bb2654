package builtin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/sandbox"
	"github.com/jean2/jean2/tool"
)

// shellSandbox is what the shell knows of the sandbox: what the machine offers and the
// cgroup folders its commands' groups go in. It is made at the first command (probing the
// kernel and making cgroup folders is not free, and a host that never runs a command
// should not pay for it) and lives as long as the tool.
type shellSandbox struct {
	opts *ShellOptions

	once   sync.Once
	status sandbox.Status
	pids   *sandbox.Pids
	memory *sandbox.Memory
	// groups, when the host gives them (UseSessionCgroups), are the session groups its
	// commands go in; then the shell makes no cgroup folder of its own.
	groups host.SessionCgroups
	// pins keeps where each workspace folder led when a command first ran there: a tool of
	// an enclosing workspace may replace it by a link (sandbox.Pins).
	pins sandbox.Pins

	// exits keeps the network exits of ended commands for their session's next ones.
	exits shellExits

	// hostOnce learns what commands take from the person's environment (learn).
	hostOnce sync.Once
	host     *shellHost
}

func (s *shellSandbox) init() {
	s.once.Do(func() {
		mode := s.opts.Sandbox.Mode
		if mode == "" {
			mode = sandbox.ModeOff
		}
		launcher := s.opts.Sandbox.Launcher
		if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
			launcher = "" // the launcher applies Landlock on Linux and Seatbelt on macOS only
		}
		s.status = sandbox.Probe(mode, launcher)
		if s.opts.Sandbox.NoNetNS && s.status.NetNS {
			s.status.NetNS, s.status.NetNSError = false, "turned off by the host's options"
			s.status.NetLandlock = sandbox.LandlockNetwork()
		}
		if launcher == "" || mode == sandbox.ModeOff || s.groups != nil {
			return
		}
		if s.opts.Limits.MaxTasks > 0 {
			if p, err := sandbox.NewPids(); err == nil {
				s.pids = p
			}
		}
		if s.opts.Limits.MemoryMB > 0 {
			if m, err := sandbox.NewMemory(s.pids); err == nil {
				s.memory = m
			}
		}
	})
}

// unconfined says why commands would run without the sandbox although the mode did not
// turn it off (auto or node mode on a machine without Landlock or Seatbelt, or without a
// launcher): then
// every command prefix needs a person's yes. "" when commands are confined, or when the
// person turned the sandbox off. An error when the mode requires what cannot be had.
func (s *shellSandbox) unconfined() (string, error) {
	s.init()
	mech, err := s.status.Choose("shell")
	if err != nil {
		return "", fmt.Errorf("shell: %w", err)
	}
	if mech == sandbox.Landlock || mech == sandbox.Seatbelt || s.status.Mode == sandbox.ModeOff {
		return "", nil
	}
	if s.status.OS == "darwin" {
		return "Seatbelt is not available here (" + s.status.SeatbeltError + ")", nil
	}
	if s.status.LandlockABI < 1 {
		return "Landlock is not available here (" + s.status.LandlockError + ")", nil
	}
	return "no sandbox launcher is configured", nil
}

// confined is one command ready to start, with what must be undone when it ends.
type shellConfined struct {
	cmd *exec.Cmd
	// refused collects the destinations the egress proxy refused while the command ran.
	refused *shellRefusals
	// release ends what is left of the command in its cgroups (safe to call again);
	// closeNet ends its network namespace and proxy.
	release, closeNet func()
}

// command builds the exec.Cmd of one command: bash -c script in cwd, through the launcher,
// with the call's file rules, no network but its own egress proxy (allowing network),
// a clean environment, the host's limits. writable are granted paths outside the
// workspace (already approved). ask, when set, is put each target the proxy would refuse
// while the connection waits; a target it allows is added to network for the command.
func (s *shellSandbox) command(c *tool.Context, bash, script, cwd string, network, writable []string, ask func(ctx context.Context, target string) bool) (*shellConfined, error) {
	return s.confine(c, bash, []string{"--noprofile", "--norc", "-c", script}, cwd, writable, shellNet{allowed: network, ask: ask})
}

// confine is command for any program of the shell's (bash with a script, or the person's
// shell in a terminal): one view, one set of rules and one egress proxy for both; net is
// what its proxy allows, asks and advises.
func (s *shellSandbox) confine(c *tool.Context, prog string, progArgs []string, cwd string, writable []string, net shellNet) (*shellConfined, error) {
	s.init()
	st := s.status
	out := &shellConfined{refused: &shellRefusals{}, release: func() {}, closeNet: func() {}}
	// Every path of the command is resolved through res: its toolchains, rules and view
	// name the same folders many times over. The launcher checks each rule's path still
	// leads where it was resolved to (Rule.Exact).
	res := policy.NewResolver()
	setup, err := s.setup(c, res)
	if err != nil {
		return nil, err
	}
	env := setup.env
	mech, err := st.Choose("shell")
	if err != nil {
		return nil, fmt.Errorf("shell: %w", err)
	}
	if mech != sandbox.Landlock && mech != sandbox.Seatbelt {
		// Mode off, or auto/node where neither Landlock nor Seatbelt can be had (Execute
		// asked the person first, see unconfined): bash as it is, with a clean environment
		// and its process group ended; no cgroup, so a process that leaves the group
		// (setsid) survives.
		cmd := exec.Command(prog, progArgs...)
		cmd.Dir, cmd.Env = cwd, env
		out.cmd = cmd
		return out, nil
	}
	places, err := s.writablePlaces(c, res, writable, setup.caches)
	if err != nil {
		return nil, err
	}
	plan := s.commandPlan(c, mech, prog, writable, setup, res)
	var exit *sandbox.Exit
	var x *shellExit
	if mech == sandbox.Seatbelt || st.NetNS || st.NetLandlock {
		var err error
		if x, err = s.exits.open(c.SessionID, mech == sandbox.Landlock && st.NetNS, net, out.refused); err != nil {
			return nil, fmt.Errorf("shell: isolate the command from the network: %w", err)
		}
		exit = x.exit
		env = append(env, exit.Env()...)
	}
	// The sensitive files a person refused in this session are hidden in the view too.
	spec, err := shellSpec(mech, plan, exit, st, c.Refused)
	if err == nil {
		err = sandbox.WritesWithin(spec.Rules, places)
	}
	var pidsDir, memDir, path string
	var args []string
	if err == nil {
		pidsDir, memDir, err = s.limit(c, &spec)
	}
	if err == nil {
		path, args, err = sandbox.Command(st.Launcher, spec, prog, progArgs)
	}
	if err != nil {
		s.exits.done(x, true) // nothing ran in it
		return nil, fmt.Errorf("shell: %w", err)
	}
	cmd := exec.Command(path, args...)
	cmd.Dir, cmd.Env = cwd, env
	inPidNS := st.StartConfined(cmd, spec) // a background command too: nothing it starts outlives jean2
	out.cmd = cmd
	out.release = func() {
		if cmd.Process != nil {
			// A process that left bash's group (setsid, a daemon) is still in the
			// command's cgroup: it ends here.
			sandbox.ReleaseWorker(memDir, cmd.Process.Pid)
			sandbox.ReleaseWorker(pidsDir, cmd.Process.Pid)
		}
	}
	out.closeNet = func() {
		// Reaped in a pid namespace of its own, the command left nothing in its exit (its
		// init's end ended the rest); one that never started put nothing there.
		s.exits.done(x, cmd.Process == nil || (inPidNS && cmd.ProcessState != nil))
	}
	return out, nil
}

// writablePlaces are the folders a command may write, where they really are: the
// workspace and allowed paths where they led when first used, the session folder never
// through a link in its place (a tool of the workspace may write the folder that holds it),
// the approved paths where they lead, and the caches. The rules made for it must lie
// within them.
func (s *shellSandbox) writablePlaces(c *tool.Context, res *policy.Resolver, writable, caches []string) ([]string, error) {
	var places []string
	for _, root := range append([]string{c.Workspace}, c.AllowedPaths...) {
		if root == "" {
			continue
		}
		real, err := s.pins.Real(root)
		if err != nil {
			return nil, fmt.Errorf("shell: %w", err)
		}
		places = append(places, real)
	}
	if c.TempDir != "" {
		t := filepath.Clean(c.TempDir)
		places = append(places, filepath.Join(res.Real(filepath.Dir(t)), filepath.Base(t)))
	}
	for _, w := range writable {
		places = append(places, res.Real(w))
	}
	return append(places, caches...), nil
}

// commandPlan says what a command may touch under mech.
func (s *shellSandbox) commandPlan(c *tool.Context, mech sandbox.Mechanism, prog string, writable []string, setup shellSetup, res *policy.Resolver) sandbox.Plan {
	st := s.status
	protected := s.opts.protected(c.Home, st.OS)
	readOnly := append(shellExisting(shellSystemReadOnly(st.OS)...), shellExisting(s.opts.ReadOnly...)...)
	readOnly = append(readOnly, setup.readOnly...)
	// Each workspace root's .jean2 is sealed by a read-only mount where the launcher can
	// mount, as for workers, and by the profile under Seatbelt (which refuses one name
	// without refusing its folder). Where Landlock cannot mount it is left writable rather
	// than carved as for workers: the carve makes the workspace folder itself read-only
	// (Landlock cannot refuse one name of a folder whose other new entries are allowed), and
	// a command must create files there; what .jean2 holds that jean2 acts on, mcp.json,
	// starts only once a person trusted its content (mcpclient's trust store), so a command
	// that writes one gains nothing.
	dirs := policy.Scope{Workspace: c.Workspace, Allowed: c.AllowedPaths}.SettingsDirs()
	mounted, unsealed, _ := sandbox.SealSettings(dirs, protected, mech == sandbox.Landlock && st.MountSeal)
	plan := shellPlan(mech, prog, readOnly, c.Workspace, c.AllowedPaths, c.TempDir, writable, protected, mounted, unsealed)
	// The caches lie in jean2's home, which is protected: granted as the call's own places
	// (ReadWrite), exactly these folders are open in it, not what holds them.
	plan.ReadWrite = append(plan.ReadWrite, setup.caches...)
	plan.Resolver = res
	return plan
}

// limit sets a command's limits in its spec: the file size, and its memory and tasks in a
// group of its own (made by the launcher) in its session's group, which the host gives
// (host.SessionCgroups: the session's limits hold for all its commands together), else in
// the shell's own cgroup folders. It returns the folders the command's groups go in.
func (s *shellSandbox) limit(c *tool.Context, spec *sandbox.Spec) (pidsDir, memDir string, err error) {
	lim := s.opts.Limits
	if lim.MaxFileMB > 0 {
		spec.FileMB = lim.MaxFileMB
	}
	if s.groups != nil {
		if pidsDir, memDir, err = s.groups(c); err != nil {
			return "", "", err
		}
	} else {
		if s.pids != nil {
			pidsDir = s.pids.Dir()
		}
		if s.memory != nil {
			memDir = s.memory.Dir()
		}
	}
	if memDir != "" && lim.MemoryMB > 0 {
		// The cgroup counts the memory of the whole command; RLIMIT_DATA would count each
		// process alone (a compiler and its children could each take the whole cap).
		spec.MemoryCgroup, spec.MemoryMaxMB = memDir, lim.MemoryMB
	} else if lim.MemoryMB > 0 {
		spec.DataMB = lim.MemoryMB
	}
	if pidsDir != "" && lim.MaxTasks > 0 {
		spec.PidsCgroup, spec.PidsMax = pidsDir, lim.MaxTasks
	} else {
		spec.TaskLimit(lim.MaxTasks, nil)
	}
	return pidsDir, memDir, nil
}

// UseSessionCgroups puts the commands in the host's session groups (host.SessionCgrouper).
// The host calls it before the first call.
func (t *shellTool) UseSessionCgroups(g host.SessionCgroups) { t.sb.groups = g }

func shellExisting(paths ...string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// protected is what no command may reach: jean2's home and tools folder as the host knows
// them, the credential folders of the user's home, and the machine's own secrets in /etc
// (readable for the programs' configuration otherwise). goos is the system's (macOS keeps
// its /etc in /private/etc, and its password hashes in master.passwd).
func (o *ShellOptions) protected(home, goos string) []string {
	out := policy.ProtectedPaths(home, o.Layout.Home, o.Layout.Tools)
	out = append(out, o.Protected...)
	if goos == "darwin" {
		return append(out, "/private/etc/master.passwd", "/private/etc/ssh", "/private/etc/sudoers", "/private/etc/sudoers.d")
	}
	return append(out, "/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/ssh", "/etc/sudoers", "/etc/sudoers.d")
}

// refusals is a slog.Handler for the egress proxy's log: it keeps the targets the proxy
// refused (the proxy logs one record per refusal, with the target as "host:port").
type shellRefusals struct {
	mu      sync.Mutex
	targets []string
}

func (r *shellRefusals) Enabled(context.Context, slog.Level) bool { return true }
func (r *shellRefusals) Handle(_ context.Context, rec slog.Record) error {
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "target" {
			r.mu.Lock()
			if t := a.Value.String(); !slices.Contains(r.targets, t) {
				r.targets = append(r.targets, t)
			}
			r.mu.Unlock()
			return false
		}
		return true
	})
	return nil
}
func (r *shellRefusals) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *shellRefusals) WithGroup(string) slog.Handler      { return r }

func (r *shellRefusals) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.targets)
}

// resolveBash finds bash on the configured PATH.
func (o *ShellOptions) resolveBash() (string, error) {
	if o.Bash != "" {
		return o.Bash, nil
	}
	for _, p := range []string{"/bin/bash", "/usr/bin/bash", "/usr/local/bin/bash"} {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return policy.Real(filepath.Clean(p)), nil
		}
	}
	p, err := exec.LookPath("bash")
	if err != nil {
		return "", fmt.Errorf("shell: bash is not installed: %w", err)
	}
	return filepath.Abs(p)
}

// close ends what is left in the commands' cgroups and removes the shell's cgroup folders.
func (s *shellSandbox) close() error {
	var errs []error
	if s.memory != nil {
		errs = append(errs, s.memory.Close())
	}
	if s.pids != nil {
		errs = append(errs, s.pids.Close())
	}
	return errors.Join(errs...)
}

// shellSystemReadOnly are the system's folders a command reads and executes beside what
// every confined process gets (Landlock's system rules, the Seatbelt profile's header):
// programs (bash, git, compilers) and their configuration (/etc/gitconfig). Not the users'
// homes, /tmp or /run.
func shellSystemReadOnly(goos string) []string {
	if goos == "darwin" {
		return sandbox.SeatbeltPrograms()
	}
	return []string{"/etc", "/opt", "/usr/local"}
}

// shellPlan is what one confined command may touch: the system's programs (readOnly), the
// call's workspace, allowed paths and session folder, and the approved writable paths;
// never the protected paths. mounted are the .jean2 folders the launcher mounts read-only
// (Landlock); unsealed the others, which the Seatbelt profile keeps read-only and Landlock
// leaves (see command).
func shellPlan(mech sandbox.Mechanism, bash string, readOnly []string, workspace string, allowed []string, tempDir string, writable, protected, mounted, unsealed []string) sandbox.Plan {
	plan := sandbox.Plan{
		Program:       bash,
		ChildProcess:  true,
		ReadOnly:      readOnly,
		ReadWrite:     append([]string{workspace}, allowed...),
		DeclaredWrite: writable,
		Protected:     protected,
		MountSealed:   mounted,
	}
	if tempDir != "" {
		// Shown at /tmp too where the view allows (Plan.Tmp): a program that writes to
		// /tmp by name writes in the session's folder, never in another session's.
		plan.ReadWrite, plan.Tmp = append(plan.ReadWrite, tempDir), tempDir
	}
	if mech == sandbox.Seatbelt {
		plan.Sealed = unsealed
	}
	return plan
}

// shellSpec is the launcher's spec of a command confined by mech: Landlock's rules, the
// view of the machine where the launcher can build one (hidden: more places to cover), and
// the exit's namespace or port; or the Seatbelt profile of the same plan, which holds the
// files and the network (only the exit's port on localhost; none without an exit). Limits
// are added by the caller.
func shellSpec(mech sandbox.Mechanism, plan sandbox.Plan, exit *sandbox.Exit, st sandbox.Status, hidden []string) (sandbox.Spec, error) {
	switch mech {
	case sandbox.Landlock:
		spec := sandbox.Spec{Landlock: true, Rules: plan.Rules(), SealedDirs: plan.MountSealed}
		if st.MountSeal {
			// The view (sandbox/view_linux.go): the machine read-only, the command's writable
			// places bound, the protected ones, jean2's own binary and hidden covered,
			// .jean2 sealed.
			spec.View, spec.SealedDirs = plan.View(append([]string{st.Launcher}, hidden...)...), nil
		}
		if exit != nil {
			exit.Apply(&spec)
		}
		return spec, nil
	case sandbox.Seatbelt:
		port := 0
		if exit != nil {
			port = exit.Port()
		}
		prof, err := plan.Seatbelt(port)
		if err != nil {
			return sandbox.Spec{}, err
		}
		return sandbox.Spec{Seatbelt: &prof}, nil
	}
	return sandbox.Spec{}, fmt.Errorf("commands are not confined by %q", mech)
}

package host

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/sandbox"
	"github.com/jean2/jean2/sandbox/egress"
)

// A stdio MCP server is a program jean2 starts, named by an mcp.json: the user's own, or a
// workspace's, trusted by a person for its bytes. What it names (node mcp/server.mjs, a
// package npx resolves in ./node_modules) is workspace content a tool or the shell may
// rewrite with no ask, so the trust of the file cannot be a trust of the code. MCPSandbox
// starts such servers through the launcher, as tool workers are: the view of the machine
// (every mount read-only, the server's workspace and its own cache folder read-write,
// $JEAN2_HOME, the credential folders and the jean2 binary hidden), Landlock's rules (reads:
// the system, the runtimes, the workspace, its cache), the environment it declares and
// nothing of jean2's, and the network only through an egress proxy to the hosts its entry
// lists. It serves jean2 serve (the workspaces' files and $JEAN2_HOME's) and every command
// that connects to MCP servers (jean2 chat, tools, mcp).

// MCPSandboxOptions say how MCP servers are confined.
type MCPSandboxOptions struct {
	// Sandbox is the host's: the mode and the launcher (jean2 itself, or a test binary that
	// answers __sandbox-exec). Mode off starts servers as they are.
	Sandbox SandboxOptions
	// Layout places the servers' cache folders (Layout.Cache/mcp) and what is protected.
	Layout Layout
	// UserHome is the home whose credential folders are hidden (os.UserHomeDir when "").
	UserHome string
	// MaxTasks caps the processes and threads of one server and what it starts
	// (DefaultMaxTasks when 0; none when negative).
	MaxTasks int
	Logger   *slog.Logger
}

// MCPSandbox confines the stdio MCP servers jean2 starts. It probes the machine at its
// first server, not before: a command that starts none does not pay for it.
type MCPSandbox struct {
	opts MCPSandboxOptions

	once      sync.Once
	status    sandbox.Status
	protected []string
	pids      *sandbox.Pids // nil when tasks are not capped by a cgroup
}

// NewMCPSandbox makes the confinement of MCP servers; Close ends what it made.
func NewMCPSandbox(opts MCPSandboxOptions) *MCPSandbox {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.UserHome == "" {
		opts.UserHome, _ = os.UserHomeDir()
	}
	if opts.MaxTasks == 0 {
		opts.MaxTasks = DefaultMaxTasks
	}
	if opts.Sandbox.Mode == "" {
		opts.Sandbox.Mode = sandbox.ModeOff
	}
	return &MCPSandbox{opts: opts}
}

func (m *MCPSandbox) init() {
	m.once.Do(func() {
		launcher := m.opts.Sandbox.Launcher
		if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
			launcher = ""
		}
		m.status = sandbox.Probe(m.opts.Sandbox.Mode, launcher)
		if m.opts.Sandbox.NoNetNS && m.status.NetNS {
			m.status.NetNS, m.status.NetNSError = false, "turned off by the host's options"
			m.status.NetLandlock = sandbox.LandlockNetwork()
		}
		if m.opts.Sandbox.NoMountSeal && m.status.MountSeal {
			m.status.MountSeal, m.status.MountSealError = false, "turned off by the host's options"
		}
		l := m.opts.Layout
		m.protected = policy.ProtectedPaths(m.opts.UserHome, l.Home, l.Tools)
		if launcher != "" && m.status.Mode != sandbox.ModeOff && m.opts.MaxTasks > 0 {
			if p, err := sandbox.NewPids(); err == nil {
				m.pids = p
			}
		}
	})
}

// Status is what the machine offers the servers.
func (m *MCPSandbox) Status() sandbox.Status {
	m.init()
	return m.status
}

// Close ends what is left in the servers' cgroup and removes its folder.
func (m *MCPSandbox) Close() error {
	if m == nil || m.pids == nil {
		return nil
	}
	return m.pids.Close()
}

// MCPLaunch is one stdio server to start.
type MCPLaunch struct {
	// Server is the server's name and File the mcp.json that lists it: together they name
	// its cache folder.
	Server, File string
	// Program and Args are what to run (Program found on Env's PATH unless it holds a
	// slash), in Dir.
	Program string
	Args    []string
	Dir     string
	// Env is the environment it would get unconfined (PATH, HOME, its declared variables);
	// Declared are the names its mcp.json sets, which win over the sandbox's HOME and TMPDIR.
	Env      []string
	Declared []string
	// Workspace is the folder it may write beside its cache ("" for none); its .jean2 stays
	// read-only.
	Workspace string
	// Network are the hosts it may reach through the proxy (egress entries).
	Network []string
}

// Command returns the process that runs the server confined, and what must be done once
// it has exited (end what is left in its cgroup, close its proxy). In mode off it is the
// server as it is. An error says why it cannot be confined here; the server then does not
// start.
func (m *MCPSandbox) Command(l MCPLaunch) (*exec.Cmd, func(), error) {
	m.init()
	st := m.status
	program, err := resolveProgram(l.Program, l.Dir, envValue(l.Env, "PATH"))
	if err != nil {
		return nil, nil, fmt.Errorf("MCP server %s: %w", l.Server, err)
	}
	mech, err := st.Choose("mcp")
	if err != nil {
		return nil, nil, fmt.Errorf("MCP server %s: %w", l.Server, err)
	}
	if st.Mode == sandbox.ModeOff {
		cmd := exec.Command(program, l.Args...)
		cmd.Dir, cmd.Env = l.Dir, l.Env
		return cmd, func() {}, nil
	}
	if mech != sandbox.Landlock && mech != sandbox.Seatbelt {
		return nil, nil, fmt.Errorf(`MCP server %s cannot be confined here (%s), so it is not started: set "sandbox": false in its entry of $JEAN2_HOME/mcp.json to run it as you, or JEAN2_SANDBOX=off`, l.Server, whyUnconfined(st))
	}
	if st.Launcher != "" && policy.Real(program) == policy.Real(st.Launcher) {
		return nil, nil, fmt.Errorf(`MCP server %s is jean2 itself, which needs its home and keys, hidden from every confined process: set "sandbox": false in its entry of $JEAN2_HOME/mcp.json`, l.Server)
	}
	c, err := m.confine(mech, l, program)
	if err != nil {
		return nil, nil, fmt.Errorf("MCP server %s: %w", l.Server, err)
	}
	return c.cmd, c.release, nil
}

// confined is a server's process made and what its end must undo.
type confined struct {
	cmd     *exec.Cmd
	release func()
}

func (m *MCPSandbox) confine(mech sandbox.Mechanism, l MCPLaunch, program string) (*confined, error) {
	st := m.status
	cache, err := mcpCacheDir(filepath.Join(m.opts.Layout.Cache, "mcp"), mcpCacheKey(l.File, l.Server))
	if err != nil {
		return nil, err
	}
	places := []string{cache}
	workspace := ""
	if l.Workspace != "" {
		workspace = policy.Real(filepath.Clean(l.Workspace))
		if p := m.protectedHolding(workspace); p != "" {
			return nil, fmt.Errorf("its folder %s lies in %s, which no confined process may reach", workspace, p)
		}
		places = append(places, workspace)
	}
	canMount := mech == sandbox.Landlock && st.MountSeal
	mounted, carved, _ := sandbox.SealSettings(policy.Scope{Workspace: workspace}.SettingsDirs(), m.protected, canMount)
	for _, d := range mounted {
		if _, err := sandbox.PrepareSealDir(filepath.Dir(d)); err != nil {
			return nil, fmt.Errorf("seal %s: %w", d, err)
		}
	}
	plan := m.plan(program, envValue(l.Env, "PATH"), workspace, cache, mounted, carved)
	exit, err := m.exit(mech, l)
	if err != nil {
		return nil, err
	}
	spec, err := m.spec(mech, plan, exit)
	if err == nil && spec.Landlock {
		err = sandbox.WritesWithin(spec.Rules, places)
	}
	var path string
	var args []string
	if err == nil {
		path, args, err = sandbox.Command(st.Launcher, spec, program, l.Args)
	}
	if err != nil {
		exit.Close()
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	cmd := exec.Command(path, args...)
	// A pid namespace of its own (nothing the server starts, an npx child, outlives jean2)
	// and, where jean2 is not root, a user namespace for its view.
	st.StartConfined(cmd, spec)
	cmd.Dir = l.Dir
	cmd.Env = mcpEnv(l, cache)
	if exit != nil {
		cmd.Env = append(cmd.Env, exit.Env()...)
	}
	pids := m.pids
	var once sync.Once
	release := func() {
		once.Do(func() {
			// What the server left (an npx child, a daemon) is in its cgroup: it ends here.
			if pids != nil && spec.PidsCgroup != "" && cmd.Process != nil {
				pids.Release(cmd.Process.Pid)
			}
			exit.Close()
		})
	}
	return &confined{cmd: cmd, release: release}, nil
}

// plan is what a confined server may touch: the system and the runtimes (the program's and
// node's on its PATH: npx is a script node runs) read and executed, its workspace (.jean2
// sealed) and cache read and written, processes started (npx starts node, servers start
// git); nothing protected.
func (m *MCPSandbox) plan(program, pathEnv, workspace, cache string, mounted, carved []string) sandbox.Plan {
	var roots []string
	for _, bin := range []string{program, lookPathIn("node", pathEnv)} {
		if bin == "" {
			continue
		}
		if r := sandbox.RuntimeRoot(bin, m.opts.UserHome); r != "" && !slices.Contains(roots, r) {
			roots = append(roots, r)
		}
	}
	p := sandbox.Plan{
		Program:      program,
		ReadOnly:     roots,
		ReadWrite:    []string{cache},
		ChildProcess: true,
		Protected:    m.protected,
		MountSealed:  mounted,
		Sealed:       carved,
	}
	if workspace != "" {
		p.ReadWrite = append(p.ReadWrite, workspace)
	}
	return p
}

// spec is the launcher's spec for a server confined by mech: the view (where the launcher
// can build one) and Landlock's rules with the exit's namespace, or the Seatbelt profile;
// the task limit.
func (m *MCPSandbox) spec(mech sandbox.Mechanism, plan sandbox.Plan, exit *sandbox.Exit) (sandbox.Spec, error) {
	st := m.status
	var spec sandbox.Spec
	switch mech {
	case sandbox.Landlock:
		spec = sandbox.Spec{Landlock: true, Rules: plan.Rules(), SealedDirs: plan.MountSealed}
		if st.MountSeal {
			// The view hides jean2's own binary too, and seals the .jean2 itself.
			spec.View, spec.SealedDirs = plan.View(st.Launcher), nil
		}
		if exit != nil {
			exit.Apply(&spec)
		}
	case sandbox.Seatbelt:
		port := 0
		if exit != nil {
			port = exit.Port()
		}
		prof, err := plan.Seatbelt(port)
		if err != nil {
			return sandbox.Spec{}, err
		}
		spec = sandbox.Spec{Seatbelt: &prof}
	}
	spec.TaskLimit(m.opts.MaxTasks, m.pids)
	return spec, nil
}

// exit is the server's way to the network: an egress proxy allowing its declared hosts, in
// a namespace of its own (Linux) or on the loopback with only its port open (Landlock's TCP
// rules, Seatbelt). nil where neither can be had: the network then stays open, as for
// workers (Status.Network says so).
func (m *MCPSandbox) exit(mech sandbox.Mechanism, l MCPLaunch) (*sandbox.Exit, error) {
	st := m.status
	if mech != sandbox.Seatbelt && !st.NetNS && !st.NetLandlock {
		return nil, nil
	}
	allowed := slices.Clone(l.Network)
	proxy := &egress.Proxy{Tool: "MCP server " + l.Server, Log: m.opts.Logger, Allowed: func() []string { return allowed },
		Advice: func(string, int) (string, string) {
			return "MCP server " + l.Server + " does not list it in its \"network\"",
				"; add it to the server's \"network\" in " + l.File + " (a workspace's file is then trusted again)"
		}}
	exit, err := sandbox.OpenExit(proxy, mech == sandbox.Landlock && st.NetNS)
	if err != nil {
		return nil, fmt.Errorf("isolate it from the network: %w", err)
	}
	return exit, nil
}

// protectedHolding returns the protected place that holds (or is) dir, "" for none.
func (m *MCPSandbox) protectedHolding(dir string) string {
	for _, p := range m.protected {
		if p != "" && policy.Within(dir, policy.Real(p)) {
			return p
		}
	}
	return ""
}

// mcpEnv is a confined server's environment: PATH, a HOME and TMPDIR of its own in its cache
// folder — npm's cache (~/.npm), uv's and every XDG cache (~/.cache) land there and persist,
// and the user's home, which it cannot read, is not pretended —, then its declared
// variables, which win. Nothing else of jean2's environment.
func mcpEnv(l MCPLaunch, cache string) []string {
	vars := map[string]string{"HOME": cache, "TMPDIR": filepath.Join(cache, "tmp")}
	for _, kv := range l.Env {
		k, v, _ := strings.Cut(kv, "=")
		if k == "PATH" || slices.Contains(l.Declared, k) {
			vars[k] = v
		}
	}
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// mcpCacheKey names a server's cache folder: its name, made safe, and a hash of its file
// and name, so that two files' servers of one name do not share one.
func mcpCacheKey(file, server string) string {
	sum := sha256.Sum256([]byte(file + "\x00" + server))
	safe := []byte(server)
	for i, c := range safe {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			safe[i] = '_'
		}
	}
	if len(safe) > 40 {
		safe = safe[:40]
	}
	return string(safe) + "-" + hex.EncodeToString(sum[:6])
}

// resolveProgram finds a server's program: on pathEnv when it is a bare name, against dir
// when it is a relative path; the launcher takes an absolute one.
func resolveProgram(name, dir, pathEnv string) (string, error) {
	p := name
	switch {
	case !strings.ContainsRune(name, '/'):
		if p = lookPathIn(name, pathEnv); p == "" {
			return "", fmt.Errorf("%s: %w", name, exec.ErrNotFound)
		}
	case !filepath.IsAbs(name):
		p = filepath.Join(dir, name)
	}
	if !filepath.IsAbs(p) {
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", err
		}
		p = abs
	}
	fi, err := os.Stat(p)
	if err != nil {
		return "", err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s is not an executable file", p)
	}
	return p, nil
}

// whyUnconfined says why neither Landlock nor Seatbelt can confine anything here.
func whyUnconfined(s sandbox.Status) string {
	if s.OS == "darwin" {
		return "no Seatbelt: " + s.SeatbeltError
	}
	if s.Launcher == "" {
		return "no sandbox launcher is configured"
	}
	if s.LandlockError != "" {
		return "Landlock is not available: " + s.LandlockError
	}
	return "Landlock is not available"
}

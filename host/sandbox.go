package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/jean2/jean2/toolfs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/jean2/jean2/internal/rawio"
	"github.com/jean2/jean2/loader"
	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/runtime/worker"
	"github.com/jean2/jean2/sandbox"
	"github.com/jean2/jean2/sandbox/egress"
	"github.com/jean2/jean2/tool"
)

// SandboxOptions say how worker processes are confined (docs/security.md).
type SandboxOptions struct {
	// Mode is the protection asked for. The zero value confines nothing, so that a program
	// embedding the host does not run a launcher it does not have; the jean2 command runs
	// with sandbox.ModeAuto (JEAN2_SANDBOX changes it).
	Mode sandbox.Mode
	// Launcher is an executable that answers `__sandbox-exec` (the jean2 binary, or a test
	// binary that does). Landlock and the memory and task limits need it.
	Launcher string
	// Approvals records approved permission declarations; nil uses
	// $JEAN2_HOME/approvals.json.
	Approvals *sandbox.Approvals
	// NoNetNS does without network namespaces even where they can be had: workers are then
	// held to their proxy by Landlock's TCP rules, where the kernel has them (tests of the
	// fallback).
	NoNetNS bool
	// NoMountSeal does without the launcher's mount namespace even where it can be had:
	// each workspace's .jean2 is then sealed by Landlock rules alone (tests of the fallback).
	NoMountSeal bool
	// TempMounter mounts the temporary folders' tmpfs for a host that may not mount
	// itself (an ordinary user's jean2 under its mounter: sandbox.EnterTempNamespace);
	// nil: the host mounts itself where it may (root).
	TempMounter *sandbox.TempMounter
}

// hostSandbox is what the host knows of the sandbox: what the machine offers, where worker
// cgroups go, who approved what, and what no worker may touch.
type hostSandbox struct {
	status    sandbox.Status
	pids      *sandbox.Pids   // nil when tasks are not capped by a cgroup
	memory    *sandbox.Memory // nil when memory is capped by RLIMIT_DATA alone
	approvals *sandbox.Approvals
	// stat makes the stats of every call (approvals, the workspace's pin) raw where that is
	// safe (rawio.Stater).
	stat      *rawio.Stater
	protected []string
	// places is protected as toolfs.ExpandPlaces gives it (each place as written and where
	// it leads), resolved at the start and again at every reload rather than in every call.
	places atomic.Pointer[[]string]
	limits Limits
	// groups are the workspaces' and sessions' cgroups beneath pids' and memory's folders
	// (cgroups.go).
	groups sessionGroups
}

func newHostSandbox(opts Options, home string) *hostSandbox {
	mode := opts.Sandbox.Mode
	if mode == "" {
		mode = sandbox.ModeOff
	}
	launcher := opts.Sandbox.Launcher
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		launcher = "" // the launcher applies Linux features, and Seatbelt on macOS, only
	}
	sb := &hostSandbox{
		status:    sandbox.Probe(mode, launcher),
		approvals: opts.Sandbox.Approvals,
		limits:    opts.Limits.withDefaults(),
	}
	sb.stat = rawio.NewStater()
	if sb.approvals == nil {
		sb.approvals = sandbox.OpenApprovalsStat(filepath.Join(opts.Layout.Home, "approvals.json"), sb.stat)
	}
	if opts.Sandbox.NoNetNS && sb.status.NetNS {
		sb.status.NetNS, sb.status.NetNSError = false, "turned off by the host's options"
		sb.status.NetLandlock = sandbox.LandlockNetwork()
	}
	if opts.Sandbox.NoMountSeal && sb.status.MountSeal {
		sb.status.MountSeal, sb.status.MountSealError = false, "turned off by the host's options"
	}
	sb.protected = policy.ProtectedPaths(home, opts.Layout.Home, opts.Layout.Tools)
	sb.resolvePlaces()
	// What an earlier host that was killed left running (a tool's daemon, a detached child)
	// ends now, before this host starts anything.
	sandbox.SweepStale()
	if launcher != "" && mode != sandbox.ModeOff && sb.limits.MaxTasks > 0 {
		if p, err := sandbox.NewPids(); err == nil {
			sb.pids = p
			sb.status.Pids = "cgroup " + p.Dir()
		} else {
			sb.status.Pids = "rlimit (RLIMIT_NPROC; ignored for root): " + err.Error()
		}
	}
	if launcher != "" && mode != sandbox.ModeOff && sb.limits.MemoryMB > 0 {
		if m, err := sandbox.NewMemory(sb.pids); err == nil {
			sb.memory = m
			sb.status.Memory = "cgroup " + m.Dir()
		} else {
			sb.status.Memory = "RLIMIT_DATA only (shared memory is not capped): " + err.Error()
		}
	}
	return sb
}

// resolvePlaces resolves the protected places again (a credential folder may have become a
// link, or its link another target, since the last time).
func (sb *hostSandbox) resolvePlaces() {
	places := toolfs.ExpandPlaces(sb.protected)
	sb.places.Store(&places)
}

// protectedPlaces is what resolvePlaces found last.
func (sb *hostSandbox) protectedPlaces() []string { return *sb.places.Load() }

func (sb *hostSandbox) close() error {
	errs := []error{sb.stat.Close()}
	if sb.memory != nil {
		errs = append(errs, sb.memory.Close())
	}
	if sb.pids != nil {
		errs = append(errs, sb.pids.Close())
	}
	return errors.Join(errs...)
}

// memoryHeadroomMB is what a worker's memory cgroup allows beyond its MemoryMB: the
// runtime's code and the kernel's memory for the process, so that a heap that grows meets
// RLIMIT_DATA (a clean out-of-memory error) before the cgroup (a kill), while shared memory,
// which RLIMIT_DATA does not count, still meets the cgroup.
const memoryHeadroomMB = 64

// Sandbox reports the protection this host gives its workers.
func (h *Host) Sandbox() sandbox.Status { return h.sb.status }

// poolScope is what fixes a confined worker's file rules and its cgroup: the places of the
// calls it serves and the session they are of. Landlock rules cannot change once applied,
// and a process is in one cgroup, so a worker serves the calls of one scope only.
type poolScope struct {
	workspace string
	allowed   []string
	// tempDir is the session's own temporary folder (the call's: Layout.Temp/workspaces/
	// <w>/<session>, …/<w>/.runs, sessions/<session>), the one place of Layout.Temp the
	// worker may write, its TMPDIR and its /tmp.
	tempDir string
	// group is the cgroup of the session the worker serves (scopeGroup of the call's own
	// temporary folder: ws-<w>/s-<session>, ws-<w>/runs, s-<session>), where its launcher
	// puts the worker's group, under the session's limits (cgroups.go).
	group string
}

// callScope is the scope of a call with context c: its workspace and allowed paths, the
// temporary folder its workers may write (its session's own, or its workspace's .runs for
// a sessionless call: no other session's) and its session's cgroup.
func (h *Host) callScope(c *tool.Context) poolScope {
	return poolScope{workspace: c.Workspace, allowed: c.AllowedPaths, tempDir: c.TempDir, group: h.scopeGroup(c.TempDir)}
}

func (s poolScope) key() string {
	allowed := slices.Clone(s.allowed)
	slices.Sort(allowed)
	return s.workspace + "\x00" + strings.Join(allowed, "\x00") + "\x00\x00" + s.tempDir + "\x00\x00" + s.group
}

// sandboxLauncher wraps a worker's launcher in the sandbox: Landlock (when that is the
// mechanism) and the memory and task limits through the launcher, Node's permission model
// through Node's own flags. base is the unconfined launcher; nodeFlags receives the flags
// of Node's permission model when that is the mechanism and returns the launcher with them.
func (t *folderTool) sandboxLauncher(base worker.Launcher, scope poolScope, wn *sandbox.Exit, withNodeFlags func([]string) worker.Launcher) worker.Launcher {
	sb := t.fl.h.sb
	// A launcher that cannot be confined still starts nothing: its Prepare fails.
	failed := func(err error) worker.Launcher {
		l := base
		l.Prepare = func() error { return err }
		return l
	}
	if t.mech == sandbox.Unconfined && sb.status.Mode == sandbox.ModeOff {
		return base
	}
	c, err := t.confine(scope)
	if err != nil {
		return failed(err)
	}
	if t.mech == sandbox.NodePermissions {
		base = withNodeFlags(sandbox.NodePermissionArgs(t.runtimeVersion, c.rules, t.childProcess()))
	}
	if sb.status.Launcher == "" {
		return base
	}
	spec, place, err := t.launcherSpec(c, scope, wn)
	if err != nil {
		return failed(err)
	}
	path, args, err := sandbox.Command(sb.status.Launcher, spec, base.Path, base.Args)
	if err != nil {
		return failed(fmt.Errorf("sandbox: %w", err))
	}
	l := base
	l.Path, l.Args = path, args
	l.Configure = func(cmd *exec.Cmd) { sb.status.StartConfined(cmd, spec) }
	if len(c.mounted) > 0 {
		l.Prepare = keepSealDirs(c.mounted, base.Prepare)
	}
	sb.watchGroups(&l, scope.group, place, spec.MemoryMaxMB)
	return l
}

// confinement is what a scope's workers are confined to, whatever the mechanism.
type confinement struct {
	plan    sandbox.Plan
	rules   []sandbox.Rule
	mounted []string // seals the launcher mounts over (seals)
	view    bool     // the worker sees the filesystem view, with the data folder bound in
}

// confine plans the confinement of the scope's workers and checks that its rules write
// nowhere but where the plan's places were pinned.
func (t *folderTool) confine(scope poolScope) (confinement, error) {
	sb := t.fl.h.sb
	places, err := t.fl.h.pinnedPlaces(scope)
	if err != nil {
		return confinement{}, err
	}
	mounted, carved := t.seals(scope)
	p := t.plan(scope)
	p.Sealed, p.MountSealed = carved, mounted
	view := sb.status.MountSeal && sb.status.Launcher != "" && t.mech != sandbox.Seatbelt
	if view {
		data, err := t.dataBind()
		if err != nil {
			return confinement{}, err
		}
		p.Binds = append(p.Binds, data)
		places = append(places, data.Target)
	}
	rules := p.Rules()
	// What the plan resolved again lies where it was pinned (no swap in between); the
	// temporary folder's own and the person-approved writes are where they lead.
	if scope.tempDir != "" {
		places = append(places, policy.Real(scope.tempDir))
	}
	for _, w := range p.DeclaredWrite {
		places = append(places, policy.Real(w))
	}
	if err := sandbox.WritesWithin(rules, places); err != nil {
		return confinement{}, fmt.Errorf("sandbox: %w", err)
	}
	return confinement{plan: p, rules: rules, mounted: mounted, view: view}, nil
}

// launcherSpec is what the sandbox launcher is told for the scope's workers: the view or
// the sealed folders, Landlock's rules, the limits, the worker's cgroups (returned as
// place) and its network exit wn (nil for none).
func (t *folderTool) launcherSpec(c confinement, scope poolScope, wn *sandbox.Exit) (sandbox.Spec, cgroupPlace, error) {
	sb := t.fl.h.sb
	spec := sandbox.Spec{Landlock: t.mech == sandbox.Landlock, DataMB: t.memoryMB(), ExtraFDs: 2, SealedDirs: c.mounted}
	if c.view {
		// The view hides jean2's own binary too, and seals the .jean2 folders itself.
		spec.View, spec.SealedDirs = c.plan.View(sb.status.Launcher), nil
	}
	if t.mech == sandbox.Seatbelt {
		// macOS: the profile holds the file rules and the network (only the proxy's port).
		port := 0
		if wn != nil {
			port = wn.Port()
		}
		prof, err := c.plan.Seatbelt(port)
		if err != nil {
			return sandbox.Spec{}, cgroupPlace{}, fmt.Errorf("sandbox: %w", err)
		}
		spec.Seatbelt, wn = &prof, nil
	}
	if sb.limits.MaxFileMB > 0 {
		spec.FileMB = sb.limits.MaxFileMB
	}
	// The worker's groups go in its session's: cgroups.go.
	place, err := sb.workerGroups(&spec, scope.group)
	if err != nil {
		return sandbox.Spec{}, cgroupPlace{}, fmt.Errorf("tool %s: %w", t.name, err)
	}
	if wn != nil {
		wn.Apply(&spec)
	}
	if spec.Landlock {
		spec.Rules = c.rules
		spec.NoFork = !t.childProcess() && sandbox.CanDenyProcesses()
	}
	return spec, place, nil
}

// pinnedPlaces are the scope's workspace folder and allowed paths where they led when
// first served (pinRoot): a link put in one's place since would have the rules grant its
// target.
func (h *Host) pinnedPlaces(scope poolScope) ([]string, error) {
	var places []string
	for _, root := range append([]string{scope.workspace}, scope.allowed...) {
		if root != "" {
			real, err := h.pinRoot(root)
			if err != nil {
				return nil, err
			}
			places = append(places, real)
		}
	}
	return places, nil
}

// keepSealDirs makes, before every start of a worker, each mounted seal's folder there, a
// real folder: the worker's rules count on it (it was made when the pool was; someone may
// have removed it since). Then it runs prepare.
func keepSealDirs(mounted []string, prepare func() error) func() error {
	return func() error {
		for _, d := range mounted {
			if _, err := sandbox.PrepareSealDir(filepath.Dir(d)); err != nil {
				return fmt.Errorf("sandbox: seal %s: %w", d, err)
			}
		}
		if prepare != nil {
			return prepare()
		}
		return nil
	}
}

// dataBind shows the tool's own persistent folder (Layout.ToolData) to its workers at
// $JEAN2_HOME/data, where jean2's tools keep their databases (todowrite's todos.db).
func (t *folderTool) dataBind() (sandbox.Bind, error) {
	h := t.fl.h
	owner := t.name
	if p := t.effectivePermissions(); p != nil && p.Data != "" {
		owner = p.Data // another tool's folder, shared by a declaration or a grant
	}
	dir, err := h.layout.ToolData(owner)
	if err != nil {
		return sandbox.Bind{}, fmt.Errorf("sandbox: %w", err)
	}
	return sandbox.Bind{Source: policy.Real(dir), Target: filepath.Join(policy.Real(h.layout.Home), "data"), Write: true}, nil
}

// plan says what a worker of this tool serving scope may touch.
func (t *folderTool) plan(scope poolScope) sandbox.Plan {
	h := t.fl.h
	p := sandbox.Plan{
		Program:   t.executable,
		ReadOnly:  []string{t.dir},
		Modules:   []string{t.program},
		Protected: h.sb.protected,
	}
	if t.moduleDir != "" {
		// Every version's bundle of the folder, so that the rules do not change from one
		// version to the next (confinedshare.go).
		p.ReadOnly, p.Modules = append(p.ReadOnly, t.moduleDir), nil
	}
	if t.rtRoot != "" {
		p.RuntimeRoot = t.rtRoot
	}
	if t.script != "" {
		p.Modules = append(p.Modules, t.script)
	}
	if scope.workspace != "" {
		p.ReadWrite = append(p.ReadWrite, scope.workspace)
	}
	p.ReadWrite = append(p.ReadWrite, scope.allowed...)
	// Each workspace root's .jean2 is sealed, by Landlock's rules here; sandboxLauncher
	// replaces this with what seals chooses (a read-only mount where the launcher can).
	p.Sealed = policy.Scope{Workspace: scope.workspace, Allowed: scope.allowed}.SettingsDirs()
	if scope.tempDir != "" {
		// TMPDIR, and /tmp in the view where it may be (Plan.Tmp).
		p.ReadWrite, p.Tmp = append(p.ReadWrite, scope.tempDir), scope.tempDir
	}
	if perms := t.effectivePermissions(); perms != nil {
		for _, r := range perms.Read {
			p.DeclaredRead = append(p.DeclaredRead, policy.Resolve(r, scope.workspace, h.home))
		}
		for _, w := range perms.Write {
			p.DeclaredWrite = append(p.DeclaredWrite, policy.Resolve(w, scope.workspace, h.home))
		}
		p.ChildProcess = perms.ChildProcess
	}
	return p
}

// seals splits the .jean2 folders of a scope's workspace roots (the workspace's and its
// allowed paths', as ctx.fs holds them), which name commands jean2 starts outside the
// sandbox (mcp.json) and which a worker may read but never make or change: those the
// launcher mounts read-only (made empty when missing, so that a worker cannot make one
// either), and those left to Landlock's rules (Plan.Sealed) because the launcher cannot
// mount here or the .jean2 is not a folder (a symbolic link, a file): then the folder that
// holds it keeps read only on its own entries.
//
// A .jean2 that is protected (jean2's own home, when the workspace is the user's home) is
// neither: the worker gets nothing of it anyway but the session's temporary folder inside
// it, which must stay writable.
func (t *folderTool) seals(scope poolScope) (mounted, carved []string) {
	st := t.fl.h.sb.status
	canMount := st.MountSeal && st.Launcher != "" && st.Mode != sandbox.ModeOff
	dirs := policy.Scope{Workspace: scope.workspace, Allowed: scope.allowed}.SettingsDirs()
	mounted, carved, why := sandbox.SealSettings(dirs, t.fl.h.sb.protected, canMount)
	for _, err := range why {
		t.fl.h.log.Warn("the workspace's .jean2 is sealed by Landlock rules alone", "tool", t.name, "reason", err.Error())
	}
	return mounted, carved
}

// approvedPermissions is the tool's declaration when it declares something and a person
// approved it for this version.
func (t *folderTool) approvedPermissions() *tool.Permissions {
	perms := t.def.Permissions
	if !sandbox.Declares(perms) || t.hash == "" {
		return nil
	}
	ok, err := t.fl.h.sb.approvals.Approved(t.def.Name, t.hash, *perms)
	if err != nil || !ok {
		return nil
	}
	return perms
}

// granted is what a person granted this version beyond its declaration (nil: nothing).
func (t *folderTool) granted() *tool.Permissions {
	if t.hash == "" {
		return nil
	}
	g, err := t.fl.h.sb.approvals.Granted(t.def.Name, t.hash)
	if err != nil {
		t.fl.h.log.Warn("the tool's grants cannot be read; it runs without them", "tool", t.name, "error", err)
		return nil
	}
	return g
}

// effectivePermissions is what the tool's workers may do beyond their context: its
// approved declaration and what a person granted this version.
func (t *folderTool) effectivePermissions() *tool.Permissions {
	return sandbox.MergePermissions(t.approvedPermissions(), t.granted())
}

// poolKey names a scope's pool. It holds what this version was granted, so that a grant
// (or its revocation) takes effect at the next call: Landlock rules and process flags are
// fixed when a pool's workers start.
func (t *folderTool) poolKey(scope poolScope) string {
	key := scope.key()
	if g := t.granted(); sandbox.Declares(g) {
		key += "\x00\x00" + sandbox.PermissionsDigest(*g)
	}
	return key
}

func (t *folderTool) childProcess() bool {
	p := t.effectivePermissions()
	return p != nil && p.ChildProcess
}

// memoryMB is the tool's memory cap: its own, else the host's; 0 for none. Its own above
// the host's counts only once approved (declareLimits): before that, the host's (a worker
// learning the definition runs with it too).
func (t *folderTool) memoryMB() int {
	if own := t.ownMemoryMB; own > 0 {
		host := t.fl.h.sb.limits.MemoryMB
		if host <= 0 || own <= host {
			return own
		}
		if p := t.approvedPermissions(); p != nil && p.MemoryMB == own {
			return own
		}
	}
	if m := t.fl.h.sb.limits.MemoryMB; m > 0 {
		return m
	}
	return 0
}

// checkApproval refuses a call of a tool whose declaration no one approved for this version.
func (t *folderTool) checkApproval() error {
	if err := t.checkInstallScripts(); err != nil {
		return err
	}
	perms := t.def.Permissions
	if !sandbox.Declares(perms) {
		return nil
	}
	ok, err := t.fl.h.sb.approvals.Approved(t.def.Name, t.hash, *perms)
	if err != nil {
		return fmt.Errorf("tool %s declares permissions (%s) but the approvals cannot be read: %w", t.def.Name, sandbox.DescribePermissions(perms), err)
	}
	if !ok {
		return fmt.Errorf("tool %s declares permissions (%s) that have not been approved for this version: a person runs `jean2 tools approve %s` once", t.def.Name, sandbox.DescribePermissions(perms), t.def.Name)
	}
	return nil
}

// PermissionState is what a tool declares beyond its context and whether it may run with it.
type PermissionState struct {
	Declared *tool.Permissions `json:"declared,omitempty"`
	// Granted is what a person granted the serving version beyond its declaration.
	Granted *tool.Permissions `json:"granted,omitempty"`
	// Approved is true when the declaration was approved for the serving version (or there
	// is nothing to approve).
	Approved  bool              `json:"approved"`
	Mechanism sandbox.Mechanism `json:"sandbox"`
	MemoryMB  int               `json:"memoryMB,omitempty"`
	// InstallScripts is set when the tool's package.json declares that its dependencies'
	// install scripts must run (see ApproveInstallScripts).
	InstallScripts *loader.InstallScripts `json:"installScripts,omitempty"`
}

// NeedsApproval reports whether calls are refused until a person approves.
func (s PermissionState) NeedsApproval() bool {
	return (sandbox.Declares(s.Declared) && !s.Approved) || (s.InstallScripts != nil && !s.InstallScripts.Approved)
}

// Permissions reports what a serving tool declares and whether it was approved.
func (h *Host) Permissions(name string) (PermissionState, bool) {
	v, ok := h.cat.Load().versions[name]
	if !ok {
		return PermissionState{}, false
	}
	ft, ok := v.tool.(*folderTool)
	if !ok {
		return PermissionState{Approved: true, Mechanism: sandbox.Unconfined}, true
	}
	st := PermissionState{Declared: ft.def.Permissions, Granted: ft.granted(), Mechanism: ft.mech, MemoryMB: ft.memoryMB(), InstallScripts: ft.scripts}
	st.Approved = !sandbox.Declares(ft.def.Permissions) || ft.approvedPermissions() != nil
	return st, true
}

// servingFolderTool is the serving version of the tool name when it is a tool folder, nil
// for a built-in; an error says so when no tool has that name.
func (h *Host) servingFolderTool(name string) (*folderTool, error) {
	cat := h.cat.Load()
	v, ok := cat.versions[name]
	if !ok {
		return nil, fmt.Errorf("%s", cat.unavailable(name))
	}
	ft, _ := v.tool.(*folderTool)
	return ft, nil
}

// ApprovePermissions records that a person approved what the serving version of a tool
// declares, and returns the declaration.
func (h *Host) ApprovePermissions(name string) (*tool.Permissions, error) {
	ft, err := h.servingFolderTool(name)
	if err != nil || ft == nil || !sandbox.Declares(ft.def.Permissions) {
		return nil, err
	}
	if err := h.sb.approvals.Approve(ft.def.Name, ft.hash, *ft.def.Permissions); err != nil {
		return nil, err
	}
	return ft.def.Permissions, nil
}

// ApproveVersion is ApprovePermissions for the version whose content hash is hash, the one
// the person was shown: a tool changed since (its declaration perhaps wider) is refused with
// ErrVersionChanged, never approved unseen. Install scripts are approved by the CLI only.
func (h *Host) ApproveVersion(name, hash string) (*tool.Permissions, error) {
	ft, err := h.servingFolderTool(name)
	if err != nil {
		return nil, err
	}
	if ft == nil || !sandbox.Declares(ft.def.Permissions) {
		return nil, fmt.Errorf("tool %s declares nothing beyond its context: there is nothing to approve", name)
	}
	if ft.hash != hash {
		return nil, fmt.Errorf("%w: tool %s is now content %.12s, not %.12s as shown: look at its declaration again", ErrVersionChanged, name, ft.hash, hash)
	}
	if ft.scripts != nil && !ft.scripts.Approved {
		return nil, fmt.Errorf("tool %s's dependencies run install scripts, which are approved with its permissions by `jean2 tools approve %s` on the command line", name, name)
	}
	if err := h.sb.approvals.Approve(ft.def.Name, ft.hash, *ft.def.Permissions); err != nil {
		return nil, err
	}
	return ft.def.Permissions, nil
}

// ErrVersionChanged: the tool's serving version is not the one a person was shown.
var ErrVersionChanged = errors.New("the tool changed")

// GrantPermissions records that a person granted the serving version of a tool more than
// it declares, and returns all it was granted. A memory cap is not granted: it is declared
// in package.json and approved.
func (h *Host) GrantPermissions(name string, p tool.Permissions) (*tool.Permissions, error) {
	return h.GrantVersion(name, "", p)
}

// GrantVersion is GrantPermissions for the version whose content hash is hash, the one
// whose refusal the person saw (Outcome.ToolHash): a tool changed since is refused with
// ErrVersionChanged, never granted unseen. An empty hash grants the serving version (the
// CLI, which shows the serving version's name).
func (h *Host) GrantVersion(name, hash string, p tool.Permissions) (*tool.Permissions, error) {
	ft, err := h.servingFolderTool(name)
	if err != nil {
		return nil, err
	}
	if ft != nil && hash != "" && ft.hash != hash {
		return nil, fmt.Errorf("%w: tool %s is now content %.12s, not %.12s, the version that was refused: run the call again and grant from its refusal", ErrVersionChanged, name, ft.hash, hash)
	}
	if ft == nil {
		if v, ok := h.cat.Load().versions[name]; ok && v.entry.Kind != "builtin" {
			return nil, fmt.Errorf("tool %s comes from an MCP server (%s): jean2 does not run its code, so it has no sandbox rules to widen", name, v.entry.Version)
		}
		return nil, fmt.Errorf("tool %s is built into jean2: it has no sandbox rules to widen", name)
	}
	if err := checkGrant(p); err != nil {
		return nil, fmt.Errorf("grant to %s: %w", name, err)
	}
	fits := func(all tool.Permissions) error {
		if n := grantedBytes(&all); n > maxGrantedBytes {
			return fmt.Errorf("grant to %s: its grants would come to %d bytes of paths and hosts, more than the %d a worker can be started with: grant a folder that holds them, or take the grants back with `jean2 tools approve %s --revoke`", name, n, maxGrantedBytes, name)
		}
		return nil
	}
	all, err := h.sb.approvals.AddGrantWithin(ft.def.Name, ft.hash, p, fits)
	if err != nil {
		return nil, err
	}
	return &all, nil
}

// maxGrantedBytes bounds what one tool version may be granted: the paths and hosts go to
// its workers' launcher in one argument, which Linux caps at 128 KiB (MAX_ARG_STRLEN)
// together with the rest of the plan; past it no worker of the tool could start.
const maxGrantedBytes = 32 << 10

func grantedBytes(p *tool.Permissions) int {
	n := 0
	if p != nil {
		for _, x := range slices.Concat(p.Read, p.Write, p.Network) {
			n += len(x)
		}
	}
	return n
}

// checkGrant refuses what cannot be granted: nothing at all, a memory cap, a path that is
// not valid (checkGrantPath), a network entry the egress proxy would not read.
func checkGrant(p tool.Permissions) error {
	if p.MemoryMB != 0 {
		return fmt.Errorf(`a memory cap is not granted: the tool declares it in package.json ("jean2": {"memoryMB": N}) and a person approves it`)
	}
	if !sandbox.Declares(&p) {
		return fmt.Errorf("nothing to grant: give paths to read or write, processes, or network hosts")
	}
	for _, path := range p.Read {
		if err := checkGrantPath(path, false); err != nil {
			return err
		}
	}
	for _, path := range p.Write {
		if err := checkGrantPath(path, true); err != nil {
			return err
		}
	}
	if _, err := egress.ParseRules(p.Network); err != nil {
		return fmt.Errorf("network: %w", err)
	}
	if p.Data != "" && !loader.IsToolFolderName(p.Data) {
		return fmt.Errorf("data: %q is not a tool name", p.Data)
	}
	return nil
}

// checkGrantPath refuses a path that would not be granted as a person reads it: empty,
// longer than a path can be, holding a NUL, not in its plain form (`/a/../b`, which is
// `/b`), climbing out of the workspace (`..`), or, to write, the root or a system folder,
// which the sandbox never opens to a tool's writes whatever is granted (sandbox.SystemPlace):
// such a grant would be shown as given and do nothing.
func checkGrantPath(path string, write bool) error {
	switch {
	case strings.TrimSpace(path) == "" || strings.ContainsRune(path, 0):
		return fmt.Errorf("the path %q is not valid", path)
	case len(path) > maxPathLen:
		return fmt.Errorf("the path %.40q… is %d bytes long, longer than a path can be (%d)", path, len(path), maxPathLen)
	}
	rel, home := strings.CutPrefix(path, "~/")
	if path == "~" {
		rel, home = ".", true
	}
	if clean := filepath.Clean(rel); clean != rel && !(home && rel == ".") {
		plain := clean
		if home {
			plain = "~/" + clean
		}
		return fmt.Errorf("the path %q is not in its plain form: grant %q", path, plain)
	}
	if !home && !filepath.IsAbs(path) && (rel == ".." || strings.HasPrefix(rel, "../")) {
		return fmt.Errorf("the path %q climbs out of the workspace: grant an absolute path", path)
	}
	if write && filepath.IsAbs(path) && sandbox.SystemPlace(path) {
		return fmt.Errorf("the sandbox never lets a tool write %s (the root or a system folder), whatever is granted", path)
	}
	return nil
}

// maxPathLen is Linux's PATH_MAX.
const maxPathLen = 4096

// RevokePermissions takes back every approval of a tool's declarations and its grants.
func (h *Host) RevokePermissions(name string) error { return h.sb.approvals.Revoke(name) }

// confineInstall runs a tool's dependency installer (npm or bun) through the launcher, as a
// worker is run. Under Landlock (Seatbelt on macOS, from the same plan) the installer and
// the install scripts may read the system, the runtimes and the tool's folder (its local
// dependencies lie in it), write the install's scratch folder, the installer's private
// folder and the installers' caches, and start processes; nothing of jean2's home, the
// credential folders (~/.npmrc too: the loader gives npm a configuration of its own) or the
// rest of the user's files. Everything the install starts shares one pids cgroup capped at
// the workers' task limit and a memory cap, and the group is ended when the installer exits
// (the release function), so no daemon survives it. The network is the registry's only,
// through an egress proxy (installExit). Without the launcher (sandbox off) the installer
// runs unconfined; the loader still passes --ignore-scripts unless scripts were approved,
// and ends its process group.
func (h *Host) confineInstall(cmd *exec.Cmd, readable, writable []string) (func(), error) {
	st := h.sb.status
	if st.Mode == sandbox.ModeOff || st.Launcher == "" {
		return nil, nil
	}
	for _, w := range writable {
		if err := os.MkdirAll(w, 0o755); err != nil {
			return nil, err
		}
	}
	exit, err := h.installExit(cmd)
	if err != nil {
		return nil, err
	}
	spec, err := h.installSpec(cmd, readable, writable, exit)
	if err != nil {
		exit.Close()
		return nil, err
	}
	path, args, err := sandbox.Command(st.Launcher, spec, cmd.Path, cmd.Args[1:])
	if err != nil {
		exit.Close()
		return nil, err
	}
	cmd.Path = path
	cmd.Args = append([]string{path}, args...)
	st.StartConfined(cmd, spec) // after the loader's process group, which it keeps
	pids := h.sb.pids
	return func() {
		if cmd.Process != nil && spec.PidsCgroup != "" && pids != nil {
			pids.Release(cmd.Process.Pid)
		}
		exit.Close()
	}, nil
}

func envValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}

func lookPathIn(name, pathEnv string) string {
	for _, dir := range filepath.SplitList(pathEnv) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// confidential reports whether a file lies where no tool may read (jean2's home outside the
// tools folder, credential folders): the bundler refuses to bundle it, even from inside the
// tool's folder (a folder that lies in a credential folder); files outside the folder are
// refused anyway. It holds whatever the sandbox mode, since bundling happens in the host.
func (h *Host) confidential(path string) bool {
	for _, p := range h.sb.protected {
		if p == "" || p == h.layout.Tools || !policy.Within(path, policy.Real(p)) {
			continue
		}
		if p == h.layout.Home && policy.Within(path, policy.Real(h.layout.Tools)) {
			continue // another tool's source is not a secret
		}
		return true
	}
	return false
}

// newWorkerNet makes a pool's way to the network (sandbox.Exit: a namespace of its own
// whose only exit is an egress proxy). The proxy allows what the tool declares and a person
// approved for this version, read again at every connection (a revoked approval holds at
// once); a probing pool's allows nothing.
func (t *folderTool) newWorkerNet(probing bool) (*sandbox.Exit, error) {
	proxy := &egress.Proxy{Tool: t.name, Log: t.fl.h.log}
	if !probing {
		proxy.Tool = t.def.Name
		proxy.Allowed = func() []string {
			if perms := t.effectivePermissions(); perms != nil {
				return perms.Network
			}
			return nil
		}
	}
	exit, err := sandbox.OpenExit(proxy, t.fl.h.sb.status.NetNS)
	if err != nil {
		return nil, fmt.Errorf("tool %s: isolate its workers from the network: %w", t.name, err)
	}
	return exit, nil
}

// packageNetwork reads "jean2": {"permissions": {"network": [...]}} of a tool folder's
// package.json (nil when there is none).
func packageNetwork(dir string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return nil, nil // no package.json: the loader has said what it needs to
	}
	var pkg struct {
		Jean2 struct {
			Permissions struct {
				Network json.RawMessage `json:"network"`
			} `json:"permissions"`
		} `json:"jean2"`
	}
	if json.Unmarshal(data, &pkg) != nil || len(pkg.Jean2.Permissions.Network) == 0 || string(pkg.Jean2.Permissions.Network) == "null" {
		return nil, nil
	}
	var list []string
	if err := json.Unmarshal(pkg.Jean2.Permissions.Network, &list); err != nil {
		return nil, fmt.Errorf(`package.json "jean2"."permissions"."network" must be a list of host names, like ["api.github.com", "*.example.com:443"]`)
	}
	return list, nil
}

// withPackageNetwork adds package.json's network entries to the definition's permissions
// (the declaration a person approves is the union) and checks every entry.
func withPackageNetwork(def tool.Definition, pkgNetwork []string) (tool.Definition, error) {
	var all []string
	if def.Permissions != nil {
		all = append(all, def.Permissions.Network...)
	}
	for _, n := range pkgNetwork {
		if !slices.Contains(all, n) {
			all = append(all, n)
		}
	}
	if _, err := egress.ParseRules(all); err != nil {
		return def, fmt.Errorf(`permissions.network (of the definition, or "jean2"."permissions"."network" of package.json): %w`, err)
	}
	if len(pkgNetwork) == 0 {
		return def, nil
	}
	perms := tool.Permissions{}
	if def.Permissions != nil {
		perms = *def.Permissions
	}
	perms.Network = all
	def.Permissions = &perms
	return def, nil
}

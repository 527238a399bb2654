package host

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jean2/jean2/loader"
	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/sandbox"
	"github.com/jean2/jean2/sandbox/egress"
)

// InstallMemoryMB caps the private writable memory of each process of a dependency install
// (npm, node-gyp, install scripts): more than a worker gets, since npm holds the whole
// dependency tree.
const InstallMemoryMB = 2048

// installSpec is the launcher's spec for an install: the file rules (under Landlock, or
// the Seatbelt profile on macOS, which also holds the network: only exit's port on
// localhost), the workers' task limit and a memory cap for everything the install starts.
// exit is the install's way to the network (installExit), nil for none.
func (h *Host) installSpec(cmd *exec.Cmd, readable, writable []string, exit *sandbox.Exit) (sandbox.Spec, error) {
	st := h.sb.status
	// The loader names the tool's folder first and then its local dependencies, which it
	// has checked lie in the folder; anything else would be a read grant beyond it.
	if len(readable) > 0 {
		folder := policy.Real(readable[0])
		for _, r := range readable[1:] {
			if !policy.Within(policy.Real(r), folder) {
				return sandbox.Spec{}, fmt.Errorf("the installer would read %s, outside the tool folder %s", r, readable[0])
			}
		}
	}
	var roots []string
	for _, bin := range []string{cmd.Path, lookPathIn("node", envValue(cmd.Env, "PATH"))} {
		if bin == "" {
			continue
		}
		if r := sandbox.RuntimeRoot(bin, h.home); r != "" {
			roots = append(roots, r)
		}
	}
	spec := sandbox.Spec{Landlock: st.LandlockABI >= 1, DataMB: InstallMemoryMB}
	switch {
	case spec.Landlock:
		plan := installPlan(cmd.Path, roots, readable, writable, h.sb.protected)
		spec.Rules = plan.Rules()
		if st.MountSeal {
			// The installer and its scripts see the machine read-only but their scratch and
			// caches (sandbox/view_linux.go): no chmod of the token or a key.
			spec.View = plan.View(st.Launcher)
		}
	case st.Seatbelt:
		// macOS: npm's scripts and node-gyp start the system's programs (sh, make, cc,
		// python), which Landlock's system rules cover on Linux and the profile names here.
		plan := installPlan(cmd.Path, append(roots, sandbox.SeatbeltPrograms()...), readable, writable, h.sb.protected)
		port := 0
		if exit != nil {
			port = exit.Port()
		}
		prof, err := plan.Seatbelt(port)
		if err != nil {
			return sandbox.Spec{}, fmt.Errorf("the installer's Seatbelt profile: %w", err)
		}
		spec.Seatbelt = &prof
	}
	if exit != nil && spec.Seatbelt == nil {
		exit.Apply(&spec) // the namespace to join
	}
	spec.TaskLimit(h.sb.limits.MaxTasks, h.sb.pids)
	return spec, nil
}

// installPlan is what an install may touch: the tool's folder and the runtimes (and, on
// macOS, the system's programs) read as a worker reads them — local dependencies lie in
// the folder, the loader refuses any other —, the install's folders written, processes
// started, and nothing of jean2's home or the credential folders (~/.npmrc included).
func installPlan(program string, readOnly, readable, writable, protected []string) sandbox.Plan {
	return sandbox.Plan{
		Program:      program,
		ReadOnly:     append(slices.Clone(readOnly), readable...),
		ReadWrite:    writable,
		ChildProcess: true,
		Protected:    protected,
	}
}

// installExit gives an install the network of a worker whose one declared host is the
// package registry: an egress proxy that allows only the registries the installer is
// configured with (installRegistries), in a namespace of its own with nothing but its
// loopback (Linux), or on this machine's loopback with the Seatbelt profile allowing only
// its port (macOS). npm and bun reach it through HTTP(S)_PROXY; an install script reaches
// nothing else, not the host's loopback services, not the jean2 API, not the rest of the
// network. The exit's Close ends the proxy and the namespace once the install is over.
// nil when neither can be had: the network then stays as it is (docs/security.md says so).
func (h *Host) installExit(cmd *exec.Cmd) (*sandbox.Exit, error) {
	st := h.sb.status
	if !st.NetNS && !st.Seatbelt {
		return nil, nil
	}
	registries := installRegistries(cmd.Env)
	proxy := &egress.Proxy{Tool: "the dependency installer", Log: h.log, Allowed: func() []string { return registries },
		Advice: func(string, int) (string, string) {
			return "a dependency install reaches only the package registry (" + strings.Join(registries, ", ") + ")",
				"; another registry is named by a registry= line of ~/.npmrc"
		}}
	exit, err := sandbox.OpenExit(proxy, st.NetNS)
	if err != nil {
		return nil, fmt.Errorf("isolate the installer from the network: %w", err)
	}
	cmd.Env = append(cmd.Env, exit.Env()...)
	return exit, nil
}

// defaultRegistry is where npm and bun fetch packages unless configured otherwise.
const defaultRegistry = "https://registry.npmjs.org/"

// installRegistries are the hosts an install may reach, as egress entries (host:port): the
// default registry, and the registries the installer's environment and its private npmrc
// (NPM_CONFIG_USERCONFIG, written by the loader with the user's registry lines only) name.
func installRegistries(env []string) []string {
	urls := []string{defaultRegistry}
	for _, k := range []string{"npm_config_registry", "NPM_CONFIG_REGISTRY"} {
		if v := envValue(env, k); v != "" {
			urls = append(urls, v)
		}
	}
	if rc := envValue(env, "NPM_CONFIG_USERCONFIG"); rc != "" {
		if data, err := os.ReadFile(rc); err == nil {
			for _, line := range strings.Split(string(data), "\n") {
				key, value, ok := strings.Cut(line, "=")
				key = strings.TrimSpace(key)
				if ok && (key == "registry" || strings.HasSuffix(key, ":registry")) {
					urls = append(urls, strings.TrimSpace(value))
				}
			}
		}
	}
	var hosts []string
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || u.Hostname() == "" || (u.Scheme != "https" && u.Scheme != "http") {
			continue
		}
		port := u.Port()
		if port == "" {
			port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
		}
		if entry := net.JoinHostPort(u.Hostname(), port); !slices.Contains(hosts, entry) {
			hosts = append(hosts, entry)
		}
	}
	return hosts
}

// installScriptsApproved tells the loader whether a person approved the install scripts of
// a folder's dependency set (loader.Options.InstallScripts).
func (h *Host) installScriptsApproved(f loader.Folder, key string) bool {
	ok, err := h.sb.approvals.ScriptsApproved(key)
	if err != nil {
		h.log.Warn("approvals cannot be read: install scripts do not run", "tool", f.Name, "error", err)
		return false
	}
	return ok
}

// checkInstallScripts refuses the calls of a tool whose dependencies' install scripts it
// declares it needs and no one approved: its dependencies were installed without them.
func (t *folderTool) checkInstallScripts() error {
	s := t.scripts
	if s == nil || s.Approved {
		return nil
	}
	return fmt.Errorf("tool %s needs the install scripts of its dependencies (%s) to run (package.json \"jean2\": {\"installScripts\": true}), and no one approved that: a person runs `jean2 tools approve %s` once", t.def.Name, strings.Join(s.Dependencies, ", "), t.def.Name)
}

// ApproveInstallScripts records that a person approved the install scripts of the
// dependency set the serving version of a tool declares it needs, and reloads the tool's
// folder so that its dependencies are installed again with them. The approval holds for
// this dependency set: changed dependencies, lockfile or local packages ask again.
func (h *Host) ApproveInstallScripts(ctx context.Context, name string) error {
	v, ok := h.cat.Load().versions[name]
	if !ok {
		return fmt.Errorf("%s", h.cat.Load().unavailable(name))
	}
	ft, ok := v.tool.(*folderTool)
	if !ok || ft.scripts == nil {
		return fmt.Errorf("tool %s does not declare that its dependencies' install scripts must run", name)
	}
	if !ft.scripts.Approved {
		if err := h.sb.approvals.ApproveScripts(name, ft.scripts.Key, ft.scripts.Dependencies); err != nil {
			return err
		}
	}
	return h.reload(ctx, map[string]bool{filepath.Clean(ft.dir): true})
}

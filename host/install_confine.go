package host

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/jean2/jean2/loader"
	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/sandbox"
)

// InstallMemoryMB caps the private writable memory of each process of a dependency install
// (npm, node-gyp, install scripts): more than a worker gets, since npm holds the whole
// dependency tree.
const InstallMemoryMB = 2048

// installSpec is the launcher's spec for an install: the file rules (under Landlock) and
// the workers' task limit and a memory cap for everything the install starts.
func (h *Host) installSpec(cmd *exec.Cmd, readable, writable []string) (sandbox.Spec, error) {
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
	if spec.Landlock {
		plan := sandbox.Plan{
			Program: cmd.Path,
			// The tool's folder and the runtimes are read like a worker reads them; local
			// dependencies lie in the folder (the loader refuses any other).
			ReadOnly:     append(roots, readable...),
			ReadWrite:    writable,
			ChildProcess: true,
			// jean2's home and every credential folder, ~/.npmrc included.
			Protected: h.sb.protected,
		}
		spec.Rules = plan.Rules()
	}
	if max := h.sb.limits.MaxTasks; max > 0 {
		if h.sb.pids != nil {
			spec.PidsCgroup, spec.PidsMax = h.sb.pids.Dir(), max
		} else {
			spec.NProcExtra = max
		}
	}
	return spec, nil
}

// installNetwork is where the network policy of installs goes (the registry only, through
// the egress proxy): it may change the spec and the installer's environment. For now the
// network stays as it is.
func (h *Host) installNetwork(cmd *exec.Cmd, spec *sandbox.Spec) error { return nil }

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

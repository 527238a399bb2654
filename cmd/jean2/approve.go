package main

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/internal/termtext"
	"github.com/jean2/jean2/sandbox"
)

// toolsApprove lets a person approve what a tool declares beyond its context (paths to read
// or write, starting processes), once per tool version: until then its calls are refused.
// It shows the declaration and asks y/n on a terminal; --yes approves without asking (for
// scripts); --revoke takes an approval back.
func toolsApprove(ctx context.Context, e env, args []string) error {
	fs := newFlags("tools approve", e)
	yes := fs.Bool("yes", false, "approve without asking")
	revoke := fs.Bool("revoke", false, "take the tool's approval back")
	var grants grantFlags
	fs.Var(&grants, "grant", "grant a power the tool does not declare: childProcess, network=HOST, read=PATH, write=PATH or data=TOOL (repeatable)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("tools approve needs exactly one tool name\n\n%s", toolsUsage)
	}
	if *revoke && len(grants.specs) > 0 {
		return usagef("give --grant or --revoke, not both\n\n%s", toolsUsage)
	}
	name := pos[0]
	h, err := openHost(ctx, e)
	if err != nil {
		return err
	}
	defer closeHost(h)
	st, ok := h.Permissions(name)
	if !ok {
		if _, listed := h.Tool(name); listed {
			return fmt.Errorf("tool %s cannot be loaded, so what it declares is not known: see jean2 tools list", name)
		}
		return fmt.Errorf("unknown tool %q: see jean2 tools list", name)
	}
	switch {
	case len(grants.specs) > 0:
		return toolsGrant(e, h, name, grants, *yes)
	case *revoke:
		if err := h.RevokePermissions(name); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "The approval of %s and what was granted to it were taken back; a tool that declares permissions is refused until it is approved again.\n", name)
		return nil
	}
	return approveDeclared(ctx, e, h, name, st, *yes)
}

// approveDeclared shows what the tool declares and, once the person says yes (or --yes),
// approves it: its dependencies' install scripts first, then its permissions.
func approveDeclared(ctx context.Context, e env, h *host.Host, name string, st host.PermissionState, yes bool) error {
	entry, _ := h.Tool(name)
	if !sandbox.Declares(st.Declared) && st.InstallScripts == nil {
		fmt.Fprintf(e.stdout, "%s declares nothing beyond its context: there is nothing to approve (to give it a power it does not declare: jean2 tools approve %s --grant POWER).\n", name, name)
		return nil
	}
	printDeclaration(e, name, entry, st)
	if !st.NeedsApproval() {
		fmt.Fprintln(e.stdout, "This version is already approved.")
		return nil
	}
	if !yes {
		if err := confirmApproval(e, name); err != nil {
			return err
		}
	}
	if scripts := st.InstallScripts; scripts != nil && !scripts.Approved {
		now, err := approveInstallScripts(ctx, h, name, st)
		if err != nil {
			return err
		}
		st = now
		entry, _ = h.Tool(name)
	}
	if sandbox.Declares(st.Declared) && !st.Approved {
		if _, err := h.ApprovePermissions(name); err != nil {
			return err
		}
	}
	fmt.Fprintf(e.stdout, "Approved %s %s; a changed version asks again.\n", name, entry.Version)
	return nil
}

// printDeclaration shows what the tool asks for and how its workers are protected. Every
// string of the declaration is the tool author's: printed with its control characters
// escaped, so that none can erase, overwrite or hide a line of what the person approves
// (TestToolsApproveAttackHiddenDeclaration).
func printDeclaration(e env, name string, entry host.Entry, st host.PermissionState) {
	fmt.Fprintf(e.stdout, "%s %s (%s, content %s) asks to:\n", termtext.Line(name), termtext.Line(entry.Version), entry.Runtime, shortHash(entry.Hash))
	if st.Declared != nil {
		printPowers(e, st.Declared)
	}
	if scripts := st.InstallScripts; scripts != nil {
		fmt.Fprintf(e.stdout, "  run the install scripts of its dependencies when they are installed: %s\n", termtext.Line(strings.Join(scripts.Dependencies, ", ")))
		fmt.Fprintln(e.stdout, "    (confined like a worker: its own folder, no credentials and no ~/.npmrc, the task and memory limits, nothing left running; no network but the package registry)")
	}
	fmt.Fprintf(e.stdout, "Protection of its workers: %s. jean2's own folder and credential folders stay closed whatever it declares.\n", st.Mechanism)
}

// confirmApproval asks y/n on the terminal; anything but yes ends the command with code 1.
func confirmApproval(e env, name string) error {
	if !e.stdinIsTerminal {
		return usagef("stdin is not a terminal to ask on: run jean2 tools approve %s --yes to approve without asking", name)
	}
	fmt.Fprint(e.stdout, "Approve? [y/N] ")
	answer, _ := bufio.NewReader(e.stdin).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
		fmt.Fprintln(e.stdout, "Not approved.")
		return exitError{code: 1}
	}
	return nil
}

// approveInstallScripts approves the install scripts, which installs the dependencies again
// with them: a new version, whose declaration must still be the one shown (st). It returns
// the new version's permission state.
func approveInstallScripts(ctx context.Context, h *host.Host, name string, st host.PermissionState) (host.PermissionState, error) {
	if err := h.ApproveInstallScripts(ctx, name); err != nil {
		return st, err
	}
	now, ok := h.Permissions(name)
	if !ok || now.InstallScripts == nil || !now.InstallScripts.Approved {
		e2, _ := h.Tool(name)
		return st, fmt.Errorf("the install scripts of %s were approved, but its dependencies could not be installed with them: %s", name, e2.Error)
	}
	if sandbox.Declares(st.Declared) != sandbox.Declares(now.Declared) || (sandbox.Declares(now.Declared) && sandbox.PermissionsDigest(*now.Declared) != sandbox.PermissionsDigest(*st.Declared)) {
		return st, fmt.Errorf("%s declares other permissions once its dependencies' install scripts ran (%s): run jean2 tools approve %s again to see them", name, sandbox.DescribePermissions(now.Declared), name)
	}
	return now, nil
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

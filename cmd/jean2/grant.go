package main

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/internal/termtext"
	"github.com/jean2/jean2/sandbox"
	"github.com/jean2/jean2/tool"
)

// grantFlags collects --grant values: childProcess, network=HOST, read=PATH, write=PATH,
// data=TOOL.
type grantFlags struct {
	specs []string
	perms tool.Permissions
}

func (g *grantFlags) String() string { return strings.Join(g.specs, ",") }

func (g *grantFlags) Set(v string) error {
	if err := sandbox.ParseGrant(v, &g.perms); err != nil {
		return fmt.Errorf("--%w", err)
	}
	g.specs = append(g.specs, v)
	return nil
}

// toolsGrant lets a person give a tool's serving version powers it does not declare (a
// tool written for a host without a sandbox declares nothing). It shows what is granted
// and asks y/n on a terminal; --yes grants without asking.
func toolsGrant(e env, h *host.Host, name string, g grantFlags, yes bool) error {
	entry, _ := h.Tool(name)
	fmt.Fprintf(e.stdout, "Grant %s %s (content %s), beyond what it declares:\n", termtext.Line(name), termtext.Line(entry.Version), shortHash(entry.Hash))
	printPowers(e, &g.perms)
	fmt.Fprintln(e.stdout, "It holds for this version only; jean2's own folder and credential folders stay closed whatever is granted.")
	if !yes {
		if !e.stdinIsTerminal {
			return usagef("stdin is not a terminal to ask on: add --yes to grant without asking")
		}
		fmt.Fprint(e.stdout, "Grant? [y/N] ")
		answer, _ := bufio.NewReader(e.stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			fmt.Fprintln(e.stdout, "Not granted.")
			return exitError{code: 1}
		}
	}
	all, err := h.GrantPermissions(name, g.perms)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Granted. %s %s may now, beyond its declaration: %s.\n", name, entry.Version, sandbox.DescribePermissions(all))
	fmt.Fprintf(e.stdout, "Take it back with jean2 tools approve %s --revoke.\n", name)
	return nil
}

// printPowers lists a declaration or a grant, one power a line. Every string is the tool
// author's or the person's: printed with its control characters escaped, so that none can
// erase, overwrite or hide a line of what the person approves.
func printPowers(e env, p *tool.Permissions) {
	for _, r := range p.Read {
		fmt.Fprintf(e.stdout, "  read     %s\n", termtext.Line(r))
	}
	for _, w := range p.Write {
		fmt.Fprintf(e.stdout, "  write    %s\n", termtext.Line(w))
	}
	if p.ChildProcess {
		fmt.Fprintln(e.stdout, "  start processes (they run under the same rules and see only its clean environment)")
	}
	if p.MemoryMB > 0 {
		fmt.Fprintf(e.stdout, "  use up to %d MB of memory per worker (above the host's cap; package.json \"jean2\": {\"memoryMB\"})\n", p.MemoryMB)
	}
	for _, n := range p.Network {
		fmt.Fprintf(e.stdout, "  connect  %s (through jean2's egress proxy)\n", termtext.Line(n))
	}
	if p.Data != "" {
		fmt.Fprintf(e.stdout, "  share    the data folder of tool %s ($JEAN2_HOME/data), instead of its own\n", termtext.Line(p.Data))
	}
}

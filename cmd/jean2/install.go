package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/install"
)

// installer makes the installer the install commands share. withValidator also starts a
// host to test-load staged tools; its tools folder is an empty scratch folder, so that
// installing one tool does not load every other one. Everything else (cache, .env,
// runtimes) is the real host's. The returned close stops that host.
func newInstaller(ctx context.Context, e env, indexFlag string, withValidator bool, progress func(install.Event)) (*install.Installer, host.Layout, func(), error) {
	layout, err := host.LayoutFromEnv(e.getenv)
	if err != nil {
		return nil, layout, nil, err
	}
	if err := layout.Ensure(); err != nil {
		return nil, layout, nil, err
	}
	indexLoc := indexFlag
	if indexLoc == "" {
		if indexLoc, err = install.IndexLocation(e.getenv, layout); err != nil {
			return nil, layout, nil, err
		}
	}
	opts := install.Options{Layout: layout, IndexLocation: indexLoc, Progress: progress}
	closeFn := func() {}
	if withValidator {
		scratch, err := os.MkdirTemp(layout.Temp, "install-validate-")
		if err != nil {
			return nil, layout, nil, err
		}
		vl := layout
		vl.Tools = scratch
		rt := install.RuntimeOptions{Preference: e.getenv("JEAN2_RUNTIME"), NodePath: e.getenv("JEAN2_NODE"), BunPath: e.getenv("JEAN2_BUN")}
		h, err := host.New(ctx, host.Options{
			Layout: vl, RuntimePreference: rt.Preference, NodePath: rt.NodePath, BunPath: rt.BunPath,
			ServerEnv: os.Environ(), Logger: cliLogger(e),
		})
		if err != nil {
			os.RemoveAll(scratch)
			return nil, layout, nil, err
		}
		opts.Validator = h
		opts.Prepare = install.NewLoaderPreparer(layout, rt, cliLogger(e))
		closeFn = func() {
			closeHost(h)
			os.RemoveAll(scratch)
		}
	}
	in, err := install.New(opts)
	if err != nil {
		closeFn()
		return nil, layout, nil, err
	}
	return in, layout, closeFn, nil
}

// installOutcome is one source's outcome, as --json prints it.
type installOutcome struct {
	Source string          `json:"source"`
	OK     bool            `json:"ok"`
	Result *install.Result `json:"result,omitempty"`
	Stage  install.Stage   `json:"stage,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// indexPick says which of the index's tools an install takes.
type indexPick struct{ recommended, all, installed bool }

func (p indexPick) any() bool { return p.recommended || p.all || p.installed }

func toolsInstall(ctx context.Context, e env, args []string) error {
	fs := newFlags("tools install", e)
	asJSON := fs.Bool("json", false, "print the outcome as JSON")
	name := fs.String("name", "", "install under this folder name")
	var pick indexPick
	fs.BoolVar(&pick.recommended, "recommended", false, "install every tool the index recommends")
	fs.BoolVar(&pick.all, "all", false, "install every tool of the index that is not installed")
	fs.BoolVar(&pick.installed, "installed", false, "reinstall from the index every installed tool it lists")
	indexFlag := fs.String("index", "", "the tool index (default: JEAN2_TOOL_REGISTRY_URL, else toolRegistryUrl in config.json, else jean2's catalogue)")
	sources, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := checkInstallArgs(pick, sources, *name); err != nil {
		return err
	}

	pp := newProgressPrinter(e.stderr, stderrIsTerminal(e))
	in, layout, closeFn, err := newInstaller(ctx, e, *indexFlag, true, pp.event)
	if err != nil {
		return err
	}
	defer closeFn()

	var idx *install.Index
	if pick.any() {
		if idx, sources, err = indexSources(ctx, in, pick); err != nil {
			return err
		}
		if len(sources) == 0 {
			fmt.Fprintf(e.stderr, "jean2: nothing to install: %s\n", nothingPicked(pick, idx))
			return nil
		}
	}
	var outcomes []installOutcome
	failed := 0
	for _, src := range sources {
		var res *install.Result
		var err error
		if idx != nil {
			res, err = in.InstallFromIndex(ctx, idx, src)
		} else {
			res, err = in.Install(ctx, src, install.InstallOptions{Name: *name})
		}
		pp.clear()
		o := installOutcome{Source: src, OK: err == nil, Result: res}
		if err != nil {
			failed++
			o.Error = err.Error()
			var ie *install.Error
			if errors.As(err, &ie) {
				o.Stage = ie.Stage
			}
			if !*asJSON {
				fmt.Fprintln(e.stderr, "jean2:", err)
			}
		} else if !*asJSON {
			printInstalled(e.stdout, res, layout)
		}
		outcomes = append(outcomes, o)
		if ctx.Err() != nil {
			break
		}
	}
	if *asJSON {
		if err := writeJSON(e.stdout, outcomes); err != nil {
			return err
		}
	}
	if failed > 0 {
		if len(sources) > 1 && !*asJSON {
			fmt.Fprintf(e.stderr, "jean2: %d of %d installs failed\n", failed, len(sources))
		}
		return exitError{code: 1}
	}
	return nil
}

func checkInstallArgs(pick indexPick, sources []string, name string) error {
	switch {
	case pick.recommended && (pick.all || pick.installed):
		return usagef("give --recommended alone, or --all and/or --installed\n\n%s", toolsUsage)
	case pick.any() && len(sources) > 0:
		return usagef("--recommended, --all and --installed install from the index; give no sources with them\n\n%s", toolsUsage)
	case !pick.any() && len(sources) == 0:
		return usagef("tools install needs a folder, an archive, a URL or a tool name (or --recommended, --all, --installed)\n\n%s", toolsUsage)
	case name != "" && len(sources) != 1:
		return usagef("--name names one tool: give exactly one source with it\n\n%s", toolsUsage)
	}
	return nil
}

// indexSources lists the index's tools an install picks: the recommended ones, or those
// not installed (--all) and/or those installed (--installed).
func indexSources(ctx context.Context, in *install.Installer, pick indexPick) (*install.Index, []string, error) {
	idx, err := in.LoadIndex(ctx)
	if err != nil {
		return nil, nil, err
	}
	if pick.recommended {
		return idx, idx.Recommended(), nil
	}
	installed, err := in.Installed()
	if err != nil {
		return nil, nil, err
	}
	var names []string
	for _, n := range idx.Names() {
		if slices.Contains(installed, n) {
			if pick.installed {
				names = append(names, n)
			}
		} else if pick.all {
			names = append(names, n)
		}
	}
	return idx, names, nil
}

func nothingPicked(pick indexPick, idx *install.Index) string {
	switch {
	case pick.recommended:
		return fmt.Sprintf("the tool index %s recommends no tools", idx.Location)
	case pick.all && !pick.installed:
		return fmt.Sprintf("every tool of the index %s is installed (--installed reinstalls them)", idx.Location)
	case pick.installed && !pick.all:
		return fmt.Sprintf("no installed tool is listed in the index %s", idx.Location)
	}
	return fmt.Sprintf("the tool index %s lists no tools", idx.Location)
}

func printInstalled(w io.Writer, res *install.Result, layout host.Layout) {
	line := fmt.Sprintf("Installed %s %s from %s", res.Name, res.Version, res.Source)
	if res.Replaced != "" {
		line += fmt.Sprintf(" (replaced %s)", res.Replaced)
	}
	fmt.Fprintln(w, line)
	if res.ToolName != "" && res.ToolName != res.Name {
		fmt.Fprintf(w, "  the tool calls itself %q; the folder is %s\n", res.ToolName, res.Folder)
	}
	if tool := cmp.Or(res.ToolName, res.Name); servingBuiltins(layout)[tool] {
		fmt.Fprintf(w, "  jean2's built-in %s keeps serving under that name; to use this one instead, add %q to \"disabledBuiltins\" in %s (or the server's settings), or rename it\n",
			tool, tool, install.ConfigFile(layout))
	}
	if missing := res.MissingEnv(); len(missing) > 0 {
		fmt.Fprintf(w, "  %s needs environment variables that are not set: %s\n", res.Name, describeEnv(missing))
		fmt.Fprintf(w, "  set them in %s or in the server's environment\n", layout.DotEnv)
	}
}

// describeEnv names variables with what the index says of them; never their values.
func describeEnv(vars []install.EnvReport) string {
	parts := make([]string, 0, len(vars))
	for _, v := range vars {
		var tags []string
		if v.Required {
			tags = append(tags, "required")
		}
		if v.Sensitive {
			tags = append(tags, "secret")
		}
		if v.Withheld {
			tags = append(tags, "reserved: jean2 never passes it to tools")
		}
		s := v.Name
		if len(tags) > 0 {
			s += " (" + strings.Join(tags, ", ") + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

func toolsRemove(ctx context.Context, e env, args []string) error {
	fs := newFlags("tools remove", e)
	force := fs.Bool("force", false, "remove a tool folder jean2 did not install (your own source) too")
	names, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return usagef("tools remove needs the name of an installed tool\n\n%s", toolsUsage)
	}
	in, layout, closeFn, err := newInstaller(ctx, e, "", false, nil)
	if err != nil {
		return err
	}
	defer closeFn()
	failed := false
	for _, n := range names {
		if err := in.Remove(ctx, n, *force); err != nil {
			fmt.Fprintln(e.stderr, "jean2:", err)
			failed = true
			continue
		}
		fmt.Fprintf(e.stdout, "Removed %s from %s\n", n, layout.Tools)
	}
	if failed {
		return exitError{code: 1}
	}
	return nil
}

func toolsOutdated(ctx context.Context, e env, args []string) error {
	fs := newFlags("tools outdated", e)
	asJSON := fs.Bool("json", false, "print JSON")
	indexFlag := fs.String("index", "", "the tool index to compare with")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("tools outdated takes no arguments\n\n%s", toolsUsage)
	}
	pp := newProgressPrinter(e.stderr, false)
	in, _, closeFn, err := newInstaller(ctx, e, *indexFlag, false, pp.event)
	if err != nil {
		return err
	}
	defer closeFn()
	st, err := in.Outdated(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(e.stdout, st)
	}
	if len(st) == 0 {
		fmt.Fprintln(e.stdout, "No tools installed from a tool index.")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tINSTALLED\tLATEST\tSTATUS")
	for _, s := range st {
		status := s.Status
		if s.Note != "" {
			status += " (" + s.Note + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, orDash(s.Installed), orDash(s.Latest), status)
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func toolsUpdate(ctx context.Context, e env, args []string) error {
	fs := newFlags("tools update", e)
	asJSON := fs.Bool("json", false, "print JSON")
	indexFlag := fs.String("index", "", "the tool index to update from")
	names, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	pp := newProgressPrinter(e.stderr, stderrIsTerminal(e))
	in, _, closeFn, err := newInstaller(ctx, e, *indexFlag, true, pp.event)
	if err != nil {
		return err
	}
	defer closeFn()
	out, err := in.Update(ctx, names)
	pp.clear()
	if err != nil {
		return err
	}
	failed := false
	for _, o := range out {
		if o.Err != nil {
			failed = true
		}
	}
	if *asJSON {
		if out == nil {
			out = []install.UpdateOutcome{}
		}
		if err := writeJSON(e.stdout, out); err != nil {
			return err
		}
	} else {
		if len(out) == 0 {
			fmt.Fprintln(e.stdout, "No tools installed from a tool index.")
		}
		for _, o := range out {
			switch {
			case o.Err != nil:
				fmt.Fprintln(e.stderr, "jean2:", o.Err)
			case o.Updated:
				fmt.Fprintf(e.stdout, "Updated %s %s → %s\n", o.Name, orDash(o.Installed), o.Result.Version)
				if missing := o.Result.MissingEnv(); len(missing) > 0 {
					fmt.Fprintf(e.stdout, "  %s needs environment variables that are not set: %s\n", o.Name, describeEnv(missing))
				}
			case o.Note != "":
				fmt.Fprintf(e.stdout, "%s: %s (%s)\n", o.Name, o.Status, o.Note)
			default:
				fmt.Fprintf(e.stdout, "%s %s: %s\n", o.Name, orDash(o.Installed), o.Status)
			}
		}
	}
	if failed {
		return exitError{code: 1}
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func stderrIsTerminal(e env) bool {
	f, ok := e.stderr.(*os.File)
	return ok && isTerminal(f)
}

// progressPrinter shows install progress on stderr: on a terminal one line rewritten in
// place (with download bytes), otherwise one plain line per stage. Notes (what was
// verified, what was cleaned up) are always printed as lines of their own.
type progressPrinter struct {
	w   io.Writer
	tty bool

	mu        sync.Mutex
	live      bool // a line is on screen without its newline
	lastTool  string
	lastStage install.Stage
}

func newProgressPrinter(w io.Writer, tty bool) *progressPrinter {
	return &progressPrinter{w: w, tty: tty}
}

var stageLabels = map[install.Stage]string{
	install.StageDownload:    "downloading",
	install.StageUnpack:      "unpacking…",
	install.StageCopy:        "copying…",
	install.StageInstallDeps: "installing dependencies…",
	install.StageBundle:      "bundling…",
	install.StageLoad:        "loading…",
	install.StageSwap:        "swapping in…",
}

func (p *progressPrinter) event(ev install.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	prefix := ""
	if ev.Tool != "" {
		prefix = ev.Tool + ": "
	}
	if ev.Note {
		p.clearLocked()
		fmt.Fprintf(p.w, "%s%s\n", prefix, ev.Message)
		return
	}
	label, ok := stageLabels[ev.Stage]
	if !ok {
		return
	}
	if ev.Stage == install.StageDownload {
		if p.tty {
			label = "downloading " + formatBytes(ev.Done)
			if ev.Total >= 0 {
				label += " / " + formatBytes(ev.Total)
			}
		} else {
			label = ev.Message
		}
	}
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s%s", prefix, label)
		p.live = true
		return
	}
	if ev.Tool == p.lastTool && ev.Stage == p.lastStage {
		return
	}
	p.lastTool, p.lastStage = ev.Tool, ev.Stage
	fmt.Fprintf(p.w, "%s%s\n", prefix, label)
}

// clear removes the live line before other output.
func (p *progressPrinter) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked()
	p.lastTool, p.lastStage = "", ""
}

func (p *progressPrinter) clearLocked() {
	if p.live {
		fmt.Fprint(p.w, "\r\033[K")
		p.live = false
	}
}

func formatBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

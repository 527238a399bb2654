package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jean2/jean2/builtin"
	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/install"
	"github.com/jean2/jean2/loader"
	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/runtime/gotool"
	"github.com/jean2/jean2/runtime/node"
	"github.com/jean2/jean2/sandbox"
)

// Check outcomes of jean2 doctor.
const (
	checkOK   = "ok"
	checkWarn = "warn" // works, with less than it could
	checkFail = "fail" // something needed is missing
)

type doctorCheck struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail"`
}

type doctorReport struct {
	Checks  []doctorCheck  `json:"checks"`
	Sandbox sandbox.Status `json:"sandbox"`
}

const doctorUsage = `Usage: jean2 doctor [--json]

Check the runtimes, the sandbox, the model providers and jean2's folders; exit 1 when something needed is missing.
`

// doctor reports the set-up: jean2's folders and whether they are writable, the runtimes
// found and their versions, the protection tool workers get (and a live test of it), the
// task cap. It exits 1 when something needed is missing, with the list of what.
func doctor(ctx context.Context, e env, args []string) error {
	fs := newFlags("doctor", e)
	asJSON := fs.Bool("json", false, "print JSON")
	if help, err := parseFlags(fs, e, args, doctorUsage, ""); help || err != nil {
		return err
	}
	var rep doctorReport
	add := func(name, status, format string, a ...any) {
		rep.Checks = append(rep.Checks, doctorCheck{Name: name, Status: status, Detail: fmt.Sprintf(format, a...)})
	}

	exe, exeErr := os.Executable()
	add("jean2", checkOK, "%s (%s)", version, orUnknown(exe, exeErr))

	layout, err := host.LayoutFromEnv(e.getenv)
	if err != nil {
		add("home", checkFail, "%v", err)
		return finishDoctor(e, rep, *asJSON)
	}
	rep.Checks = append(rep.Checks, layoutChecks(layout)...)

	rep.Checks = append(rep.Checks, providersCheck(layout.Home, e.getenv))

	rts := runtimeChecks(e, add)

	sb, err := sandboxOptions(e)
	if err != nil {
		add("sandbox", checkFail, "%v", err)
		return finishDoctor(e, rep, *asJSON)
	}
	st := sandboxChecks(ctx, e, sb, exe, rts, add)
	rep.Sandbox = st
	if c, ok := mcpDoctorCheck(layout, st); ok {
		rep.Checks = append(rep.Checks, c)
	}
	add("worker places", checkOK, "workers may write only the call's workspace, its allowed paths and the workspace's folder under %s", filepath.Join(layout.Temp, "workspaces"))
	return finishDoctor(e, rep, *asJSON)
}

// checkAdder adds one check to doctor's report.
type checkAdder func(name, status, format string, a ...any)

// doctorRuntimes are the JavaScript runtimes doctor found, or why each is missing.
type doctorRuntimes struct {
	nodeRT, bunRT   node.Runtime
	nodeErr, bunErr error
}

// runtimeChecks reports Node, Bun and Go. A missing JavaScript runtime is a warning while
// the other one is there, a failure when neither is (no JavaScript tool can run).
func runtimeChecks(e env, add checkAdder) doctorRuntimes {
	var r doctorRuntimes
	r.nodeRT, r.nodeErr = node.Detect(node.DetectOptions{Preference: node.KindNode, NodePath: e.getenv("JEAN2_NODE")})
	r.bunRT, r.bunErr = node.Detect(node.DetectOptions{Preference: node.KindBun, BunPath: e.getenv("JEAN2_BUN")})
	jsStatus := checkWarn
	if r.nodeErr != nil && r.bunErr != nil {
		jsStatus = checkFail
	}
	for _, c := range []struct {
		name string
		rt   node.Runtime
		err  error
	}{{"node", r.nodeRT, r.nodeErr}, {"bun", r.bunRT, r.bunErr}} {
		if c.err != nil {
			add(c.name, jsStatus, "%v", c.err)
		} else {
			add(c.name, checkOK, "%s %s", c.rt.Version, c.rt.Path)
		}
	}
	if tc, err := gotool.Detect(e.getenv("JEAN2_GO")); err != nil {
		add("go", checkWarn, "Go tool folders cannot be built: %v", err)
	} else {
		add("go", checkOK, "%s %s", tc.Version, tc.Go)
	}
	return r
}

// sandboxChecks reports the protection workers get: the mechanism chosen for Node, the
// platform's own check, a live test of it, Linux's limits and the network; it returns the
// sandbox's status.
func sandboxChecks(ctx context.Context, e env, sb host.SandboxOptions, exe string, rts doctorRuntimes, add checkAdder) sandbox.Status {
	st := sandbox.Probe(sb.Mode, sb.Launcher)
	if st.Launcher != "" && exe == "" {
		st.Launcher = ""
	}
	nodeMech, chooseErr := st.Choose(node.KindNode)
	confined := nodeMech == sandbox.Landlock || nodeMech == sandbox.Seatbelt
	switch {
	case chooseErr != nil:
		add("sandbox", checkFail, "%v", chooseErr)
	case confined:
		add("sandbox", checkOK, "mode %s: %s", st.Mode, st.Summary())
	default:
		add("sandbox", checkWarn, "mode %s: %s", st.Mode, st.Summary())
	}
	if c, ok := platformCheck(st); ok {
		add(c.Name, c.Status, "%s", c.Detail)
	}
	if confined {
		rt := rts.nodeRT
		if rts.nodeErr != nil {
			rt = rts.bunRT
		}
		if rt.Path == "" {
			add("sandbox test", checkWarn, "no runtime to test the sandbox with")
		} else if err := sandboxSelfTest(ctx, st.Launcher, nodeMech, rt); err != nil {
			add("sandbox test", checkFail, "%v", err)
		} else {
			add("sandbox test", checkOK, "a %s worker under %s read its own file and was refused a file outside its rules", rt.Kind, mechName(nodeMech))
		}
	}
	if st.Mode != sandbox.ModeOff && st.Launcher != "" && runtime.GOOS == "linux" {
		linuxLimitChecks(ctx, st, e.tempMounter, add)
	}
	if st.Mode != sandbox.ModeOff && nodeMech != sandbox.Unconfined {
		switch {
		case st.NetNS, nodeMech == sandbox.Seatbelt:
			add("network", checkOK, "confined workers have %s", st.Network())
		case st.Mode == sandbox.ModeRequire:
			add("network", checkFail, "workers cannot be isolated from the network (%s), and the sandbox mode is require", st.NetNSError)
		default:
			add("network", checkWarn, "confined workers: %s; JEAN2_SANDBOX=require refuses to run tools then", st.Network())
		}
	}
	return st
}

// linuxLimitChecks reports what bounds a confined process on Linux: its task and memory
// cgroups, its pid namespace, the temporary folder's quota and its capabilities.
func linuxLimitChecks(ctx context.Context, st sandbox.Status, mounter *sandbox.TempMounter, add checkAdder) {
	if p, err := sandbox.NewPids(); err == nil {
		add("task limit", checkOK, "a pids cgroup per worker under %s", filepath.Dir(p.Dir()))
		_ = p.Close()
	} else if os.Getuid() == 0 {
		add("task limit", checkWarn, "no pids cgroup (%v), and RLIMIT_NPROC does not hold root: a tool may start processes without bound", err)
	} else {
		add("task limit", checkWarn, "no pids cgroup (%v): RLIMIT_NPROC caps the tasks of the whole user instead", err)
	}
	if m, err := sandbox.NewMemory(nil); err == nil {
		add("memory limit", checkOK, "a memory cgroup per worker under %s (shared memory counts)", filepath.Dir(m.Dir()))
		_ = m.Close()
	} else {
		add("memory limit", checkWarn, "no memory cgroup (%v): RLIMIT_DATA caps private memory only, not shared memory (memfd)", err)
	}
	if st.PidNS {
		add("lifetime", checkOK, "each worker and shell command runs in a pid namespace of its own: nothing it starts outlives jean2, kill -9 included")
	} else {
		add("lifetime", checkWarn, "no pid namespace per worker (%s): what a tool or command detaches outlives a kill -9 of jean2 until jean2 next starts", st.PidNSError)
	}
	if err := mounter.Probe(); err == nil {
		where := ""
		if mounter != nil {
			where = ", mounted in jean2's own user and mount namespace"
		}
		add("temp quota", checkOK, "each session's temporary folder is a tmpfs of its own quota (a write past it fails with ENOSPC)%s", where)
	} else {
		add("temp quota", checkWarn, "no tmpfs (%v): the temporary folder quota is measured every 250 ms, and a background command may write past it", err)
	}
	if bounded, err := capabilityCheck(ctx, st); err != nil {
		add("privileges", checkFail, "%v", err)
	} else if bounded {
		add("privileges", checkOK, "workers start with no capability (bounding set empty, securebits locked) and no_new_privs")
	} else {
		add("privileges", checkOK, "workers start with no capability and no_new_privs (jean2 may not empty the bounding set: no CAP_SETPCAP)")
	}
}

// providersCheck reads the providers as jean2 serve does, so a providers.json that serve
// would refuse fails here too; none configured is a warning (sessions cannot answer yet).
func providersCheck(home string, getenv func(string) string) doctorCheck {
	set, err := provider.Load(home, getenv)
	if err != nil {
		return doctorCheck{Name: "providers", Status: checkFail, Detail: fmt.Sprintf("%v (jean2 serve refuses to start with it; docs/providers.md)", err)}
	}
	lines := providerLines(set, home)
	if len(set.Providers) == 0 {
		return doctorCheck{Name: "providers", Status: checkWarn, Detail: strings.Join(lines, " ")}
	}
	return doctorCheck{Name: "providers", Status: checkOK, Detail: strings.Join(lines, "; ")}
}

// platformCheck is what doctor says of the system's own confinement outside Linux: on
// macOS whether Seatbelt (sandbox-exec) is there; on Windows, plainly, that nothing
// confines a tool's code, that running tools so is the person's choice (JEAN2_SANDBOX=off)
// and that WSL gives the Linux sandbox. ok is false on Linux, where the other checks say
// it all.
func platformCheck(st sandbox.Status) (c doctorCheck, ok bool) {
	switch st.OS {
	case "linux", "":
		return doctorCheck{}, false
	case "darwin":
		c.Name = "seatbelt"
		switch {
		case st.Seatbelt:
			c.Status, c.Detail = checkOK, sandbox.SeatbeltExec+" is there: each worker runs under a Seatbelt profile made from its plan (its files, the call's places, the session folder; never jean2's home or credential folders; network only to its egress proxy)"
		case st.Mode == sandbox.ModeOff:
			c.Status, c.Detail = checkWarn, "sandbox mode off: workers are not confined (Seatbelt is not used)"
		case st.Mode == sandbox.ModeRequire:
			c.Status, c.Detail = checkFail, "workers cannot be confined ("+st.SeatbeltError+"), and the sandbox mode is require"
		default:
			c.Status, c.Detail = checkWarn, "workers cannot be confined with Seatbelt ("+st.SeatbeltError+"): Node tools get Node's permission model, Bun and Go tools run unconfined"
		}
		return c, true
	}
	c.Name = "platform"
	switch st.Mode {
	case sandbox.ModeOff, sandbox.ModeNode:
		c.Status = checkWarn
		c.Detail = st.OS + " has no sandbox for tools: their code runs without OS confinement, as you chose (JEAN2_SANDBOX=" + string(st.Mode) +
			"); ctx.fs, the environment and asks still hold. Run jean2 in WSL for Landlock confinement"
	default:
		c.Status = checkFail
		c.Detail = "jean2 refuses to run tools: " + st.OS + " has no sandbox for them. " + strings.ToUpper(sandbox.WindowsAdvice[:1]) + sandbox.WindowsAdvice[1:]
	}
	return c, true
}

func finishDoctor(e env, rep doctorReport, asJSON bool) error {
	var problems []string
	for _, c := range rep.Checks {
		if c.Status == checkFail {
			problems = append(problems, c.Name+": "+c.Detail)
		}
	}
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		for _, c := range rep.Checks {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Status, c.Name, c.Detail)
		}
		_ = tw.Flush()
	}
	if len(problems) > 0 {
		fmt.Fprintf(e.stderr, "jean2 doctor: %d problem(s):\n  %s\n", len(problems), strings.Join(problems, "\n  "))
		return exitError{code: 1}
	}
	return nil
}

// mechName is how doctor names a mechanism in a sentence.
func mechName(m sandbox.Mechanism) string {
	if m == sandbox.Seatbelt {
		return "Seatbelt"
	}
	return "Landlock"
}

// sandboxSelfTest starts the runtime through the launcher under Landlock (or Seatbelt on
// macOS) with one readable file, and has it read that file and one beside it that no rule
// grants: the first must work, the second must be refused.
func sandboxSelfTest(ctx context.Context, launcher string, mech sandbox.Mechanism, rt node.Runtime) error {
	dir, err := os.MkdirTemp("", "jean2-doctor-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	granted := filepath.Join(dir, "granted", "own.txt")
	secret := filepath.Join(dir, "secret.txt")
	if err := errors.Join(os.MkdirAll(filepath.Dir(granted), 0o700), os.WriteFile(granted, []byte("own"), 0o600), os.WriteFile(secret, []byte("secret"), 0o600)); err != nil {
		return err
	}
	plan := sandbox.Plan{Program: rt.Path, RuntimeRoot: sandbox.RuntimeRoot(rt.Path, ""), ReadOnly: []string{filepath.Dir(granted)}}
	script := `const fs = require('fs'); const r = {};
for (const [k, p] of [['own', process.argv[1]], ['secret', process.argv[2]]]) {
  try { r[k] = fs.readFileSync(p, 'utf8'); } catch (e) { r[k] = e.code; }
}
console.log(JSON.stringify(r));`
	args := []string{"-e", script, granted, secret}
	if rt.Kind == node.KindBun {
		args = []string{"-e", script, "--", granted, secret}
	}
	spec := sandbox.Spec{Landlock: true, Rules: plan.Rules()}
	refused := "EACCES"
	if mech == sandbox.Seatbelt {
		prof, err := plan.Seatbelt(0)
		if err != nil {
			return err
		}
		spec, refused = sandbox.Spec{Seatbelt: &prof}, "EPERM" // Seatbelt answers EPERM
	}
	path, argv, err := sandbox.Command(launcher, spec, rt.Path, args)
	if err != nil {
		return err
	}
	tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(tctx, path, argv...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
	cmd.Dir = filepath.Dir(granted)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("the launcher did not run %s: %v: %s", rt.Path, err, strings.TrimSpace(stderr.String()))
	}
	var got struct{ Own, Secret string }
	if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &got); err != nil {
		return fmt.Errorf("unexpected output %q: %v", out.String(), err)
	}
	switch {
	case got.Secret == "secret":
		return fmt.Errorf("a worker under %s read a file outside its rules: the sandbox does not hold here", mechName(mech))
	case got.Own != "own":
		return fmt.Errorf("a worker under %s could not read its own file (%s)", mechName(mech), got.Own)
	case got.Secret != refused:
		return fmt.Errorf("reading a file outside the rules failed with %s, not %s", got.Secret, refused)
	}
	return nil
}

// writable makes dir if needed and checks that a file can be made in it.
func writable(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".doctor-*")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

func orUnknown(s string, err error) string {
	if err != nil || s == "" {
		return "path unknown"
	}
	return s
}

// capabilityCheck starts cat through the launcher and reads its capability sets: all must be
// empty. It reports whether the bounding set is empty too (the launcher empties it when
// jean2 holds CAP_SETPCAP, as root does).
func capabilityCheck(ctx context.Context, st sandbox.Status) (bool, error) {
	cat, err := exec.LookPath("cat")
	if err != nil {
		return false, nil // nothing to start; the launcher's own tests cover it
	}
	path, argv, err := sandbox.Command(st.Launcher, sandbox.Spec{}, cat, []string{"/proc/self/status"})
	if err != nil {
		return false, err
	}
	cmd := exec.CommandContext(ctx, path, argv...)
	st.StartConfined(cmd, sandbox.Spec{}) // as every launcher starts: a user namespace where jean2 is not root
	out, err := cmd.Output()
	if err != nil {
		return false, fmt.Errorf("start a program through the launcher: %w", err)
	}
	bounded := false
	for _, line := range strings.Split(string(out), "\n") {
		k, v, _ := strings.Cut(line, ":")
		empty := strings.Trim(strings.TrimSpace(v), "0") == ""
		switch {
		case k == "CapBnd":
			bounded = empty
		case strings.HasPrefix(k, "Cap") && !empty:
			return false, fmt.Errorf("a worker would start with capabilities (%s %s)", k, strings.TrimSpace(v))
		}
	}
	return bounded, nil
}

// shadowedBuiltins lists the tool folders named as a built-in that serves: the built-in
// does, the folder's tool does not. A folder is known by its name here, as before its
// definition is loaded (jean2's catalogue names its folders after its tools).
func shadowedBuiltins(layout host.Layout, folders []loader.Folder) []string {
	served := servingBuiltins(layout)
	var names []string
	for _, f := range folders {
		if served[f.Name] {
			names = append(names, f.Name)
		}
	}
	return names
}

// servingBuiltins names the built-ins that config.json's disabledBuiltins does not turn off.
func servingBuiltins(layout host.Layout) map[string]bool {
	_, disabled, err := builtins(layout, host.SandboxOptions{})
	if err != nil {
		return nil // reported by every command that starts a host
	}
	served := map[string]bool{}
	for _, t := range builtin.Tools(builtin.Options{}) {
		served[t.Definition().Name] = true
	}
	for _, n := range disabled {
		delete(served, n)
	}
	return served
}

// layoutChecks checks that jean2's folders are writable, and names the tool folders a
// built-in of their name keeps from serving.
func layoutChecks(layout host.Layout) []doctorCheck {
	var checks []doctorCheck
	add := func(name, status, format string, a ...any) {
		checks = append(checks, doctorCheck{Name: name, Status: status, Detail: fmt.Sprintf(format, a...)})
	}
	var shadowed []string
	for _, d := range []struct{ name, dir string }{{"home", layout.Home}, {"tools folder", layout.Tools}, {"cache", layout.Cache}, {"temp", layout.Temp}} {
		if err := writable(d.dir); err != nil {
			add(d.name, checkFail, "%s: %v", d.dir, err)
			continue
		}
		detail := d.dir + " (writable)"
		switch d.name {
		case "tools folder":
			folders, _ := loader.Discover(d.dir)
			detail += fmt.Sprintf(", %d tool folder(s)", len(folders))
			shadowed = shadowedBuiltins(layout, folders)
		case "cache":
			detail += ", " + humanBytes(dirSize(d.dir))
		}
		add(d.name, checkOK, "%s", detail)
	}
	if len(shadowed) > 0 {
		add("built-in names", checkWarn, "tool folder(s) %s have the names of built-ins, which serve in their place; to use a folder's tool instead, "+
			`add its name to "disabledBuiltins" in %s (or the server's settings), or rename it`, strings.Join(shadowed, ", "), install.ConfigFile(layout))
	}
	return checks
}

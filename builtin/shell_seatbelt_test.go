package builtin

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/sandbox"
	"github.com/jean2/jean2/tool"
)

// updating is the -update flag of the package's tests (host_test.go defines it, in the
// external test package of the same binary): it rewrites the golden files.
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// The shell's profiles on macOS, made from its plan as command makes it, in macOS paths
// that do not exist here (policy.Real leaves them as they are, so the profiles do not depend
// on the machine). go test ./builtin -run TestShellSeatbeltGolden -update rewrites them. What
// only a Mac can check is that sandbox-exec accepts them and that bash, git and a compiler
// run under them (docs/security.md).
func TestShellSeatbeltGolden(t *testing.T) {
	const home, jean2 = "/Users/ada", "/Users/ada/.jean2"
	opts := ShellOptions{Layout: host.Layout{Home: jean2, Tools: jean2 + "/tools"}}
	protected := opts.protected(home, "darwin")
	ws := "/Users/ada/src/app"
	// The system's folders less /bin and /sbin, which are links to /usr/bin and /usr/sbin on
	// many Linux machines (policy.Real would make the profiles depend on the machine).
	var system []string
	for _, d := range shellSystemReadOnly("darwin") {
		if d != "/bin" && d != "/sbin" {
			system = append(system, d)
		}
	}
	for _, d := range []string{"/bin", "/usr/bin", "/opt", "/private/etc", "/Library/Developer/CommandLineTools"} {
		if !slices.Contains(shellSystemReadOnly("darwin"), d) {
			t.Errorf("commands on macOS cannot read %s", d)
		}
	}
	tmp := jean2 + "/tmp/sessions/s1"
	cases := map[string]struct {
		plan sandbox.Plan
		port int
	}{
		// A command in its workspace with the network through its proxy.
		"shell-command": {shellPlan(sandbox.Seatbelt, "/usr/local/bin/bash", system, ws, nil, tmp, nil, protected, nil,
			[]string{ws + "/.jean2"}), 43127},
		// An allowed path, an approved write outside the workspace, Homebrew's bash, a
		// toolchain in the home folder, no network.
		"shell-allowed-write": {shellPlan(sandbox.Seatbelt, "/opt/homebrew/bin/bash",
			append(system, home+"/.cargo"), ws, []string{"/Users/ada/src/lib"}, tmp,
			[]string{home + "/.cache/app"}, protected, nil, []string{ws + "/.jean2", "/Users/ada/src/lib/.jean2"}), 0},
	}
	for name, c := range cases {
		s, err := c.plan.Seatbelt(c.port)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var b strings.Builder
		b.WriteString(s.Profile)
		b.WriteString("\n;;; parameters (sandbox-exec -D)\n")
		for _, p := range s.Params {
			b.WriteString(";;; " + p.Name + "=" + p.Value + "\n")
		}
		file := filepath.Join("testdata", "seatbelt", name+".sb")
		if updating() {
			if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%s: %v (run with -update to make it)", name, err)
		}
		if string(want) != b.String() {
			t.Errorf("%s: the profile differs from %s (run with -update if the change is meant):\n%s", name, file, b.String())
		}
		// What the profile must hold whatever its wording: the workspace and session folder
		// writable, jean2's home and the credential folders denied, .jean2 never written.
		params := map[string]string{}
		for _, p := range s.Params {
			params[p.Name] = p.Value
		}
		values := func(prefix string) []string {
			var out []string
			for k, v := range params {
				if strings.HasPrefix(k, prefix) && !strings.Contains(k[len(prefix):], "_") {
					out = append(out, v)
				}
			}
			return out
		}
		writes, denied, sealed := values("WRITE_"), values("PROTECTED_"), values("SEALED_")
		for _, w := range []string{ws, tmp} {
			if !slices.Contains(writes, w) {
				t.Errorf("%s: %s is not writable (writes %v)", name, w, writes)
			}
		}
		for _, d := range []string{jean2, home + "/.ssh", home + "/.aws", "/private/etc/master.passwd"} {
			if !slices.Contains(denied, d) {
				t.Errorf("%s: %s is not denied (denied %v)", name, d, denied)
			}
		}
		if !slices.Contains(sealed, ws+"/.jean2") {
			t.Errorf("%s: the workspace's .jean2 is not sealed (%v)", name, sealed)
		}
		if !strings.Contains(s.Profile, "(allow process-fork)") {
			t.Errorf("%s: commands may not start programs", name)
		}
		net := strings.Contains(s.Profile, "(allow network-outbound")
		if net != (c.port > 0) || (c.port > 0 && !strings.Contains(s.Profile, `(remote ip "localhost:`+strconv.Itoa(c.port)+`")`)) {
			t.Errorf("%s: network rules do not match port %d", name, c.port)
		}
	}
}

// preset is a shell sandbox whose status is st, as Probe would give it on that system: the
// decision and the spec are made without probing this machine.
func preset(t *testing.T, st sandbox.Status, opts ShellOptions) *shellSandbox {
	s := &shellSandbox{opts: &opts}
	s.once.Do(func() {})
	s.status = st
	t.Cleanup(func() { _ = s.close() })
	return s
}

// decode reads the spec the launcher would receive from a command's arguments.
func decode(t *testing.T, args []string) (sandbox.Spec, []string) {
	t.Helper()
	i := slices.Index(args, "--spec")
	if len(args) < 2 || args[1] != sandbox.ExecArg || i < 0 {
		t.Fatalf("not a launcher command: %q", args)
	}
	spec, err := sandbox.DecodeSpec(args[i+1])
	if err != nil {
		t.Fatal(err)
	}
	return spec, args[i+3:]
}

// On macOS with sandbox-exec, a command goes through the launcher with the Seatbelt profile
// of its plan, never Landlock's rules or a namespace, and its network is a proxy on this
// machine's loopback whose port is the one the profile allows: a CONNECT to a host no one
// allowed is refused there and reported. Everything but sandbox-exec itself runs here.
func TestShellDarwinSpec(t *testing.T) {
	root := t.TempDir()
	ws, tmp, home := filepath.Join(root, "ws"), filepath.Join(root, "tmp"), filepath.Join(root, "home")
	for _, d := range []string{ws, tmp, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	launcher := "/Applications/jean2.app/Contents/MacOS/jean2"
	st := sandbox.Status{Mode: sandbox.ModeAuto, OS: "darwin", Seatbelt: true, Launcher: launcher, Pids: "none",
		LandlockError: "Landlock exists only on Linux", NetNSError: "network namespaces exist only on Linux"}
	opts := ShellOptions{Layout: host.Layout{Home: filepath.Join(home, ".jean2"), Tools: filepath.Join(home, ".jean2", "tools")},
		Limits: host.Limits{MemoryMB: 512, MaxTasks: 64, MaxFileMB: 100}}
	s := preset(t, st, opts)
	if why, err := s.unconfined(); err != nil || why != "" {
		t.Fatalf("with Seatbelt the shell would ask before each command prefix: %q, %v", why, err)
	}
	c := tool.NewContext(tool.Context{Workspace: ws, TempDir: tmp, Home: home})
	cf, err := s.command(c, "/bin/bash", "echo hi", ws, []string{"registry.npmjs.org"}, []string{filepath.Join(root, "out")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cf.closeNet()
	if cf.cmd.Path != launcher {
		t.Fatalf("the command runs %s, not through the launcher", cf.cmd.Path)
	}
	spec, rest := decode(t, cf.cmd.Args)
	if want := []string{"/bin/bash", "--noprofile", "--norc", "-c", "echo hi"}; !slices.Equal(rest, want) {
		t.Errorf("program and arguments %q, want %q", rest, want)
	}
	if spec.Seatbelt == nil || spec.Landlock || len(spec.Rules) > 0 || spec.NetNS != "" || spec.ProxyPort != 0 || len(spec.SealedDirs) > 0 {
		t.Fatalf("spec %+v: want a Seatbelt profile and nothing of Linux", spec)
	}
	if spec.DataMB != 512 || spec.FileMB != 100 || spec.NProcExtra != 64 {
		t.Errorf("limits %+v, want dataMB 512, fileMB 100, nprocExtra 64", spec)
	}
	params := map[string]string{}
	for _, p := range spec.Seatbelt.Params {
		params[p.Name] = p.Value
	}
	var writes, sealed []string
	for k, v := range params {
		switch {
		case strings.HasPrefix(k, "WRITE_") && !strings.Contains(k, "EXCEPT"):
			writes = append(writes, v)
		case strings.HasPrefix(k, "SEALED_"):
			sealed = append(sealed, v)
		}
	}
	for _, w := range []string{policy.Real(ws), policy.Real(tmp), filepath.Join(root, "out")} {
		if !slices.Contains(writes, w) {
			t.Errorf("%s is not writable: %v", w, writes)
		}
	}
	if !slices.Contains(sealed, filepath.Join(ws, ".jean2")) {
		t.Errorf("the workspace's .jean2 is not sealed: %v", sealed)
	}
	if !strings.Contains(spec.Seatbelt.Profile, "(deny file-read* file-write* process-exec") {
		t.Error("the profile denies nothing protected")
	}

	// The port the profile allows is the proxy's, which the environment names.
	var proxy string
	for _, kv := range cf.cmd.Env {
		if v, ok := strings.CutPrefix(kv, "JEAN2_EGRESS_PROXY="); ok {
			proxy = v
		}
	}
	_, port, _ := net.SplitHostPort(proxy)
	if proxy == "" || !strings.Contains(spec.Seatbelt.Profile, `(allow network-outbound (remote ip "localhost:`+port+`"))`) {
		t.Fatalf("the profile does not allow the proxy %q:\n%s", proxy, spec.Seatbelt.Profile)
	}
	conn, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n")
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || !strings.Contains(line, "403") {
		t.Fatalf("the proxy answered %q, %v; want a refusal", line, err)
	}
	if got := cf.refused.list(); !slices.Contains(got, "evil.example:443") {
		t.Errorf("refusals %v do not name evil.example:443", got)
	}
}

// The decision on each system: Seatbelt on macOS where sandbox-exec is there, Landlock on
// Linux, and where neither can be had a command asks (auto) or is refused (require).
func TestShellMechanismByStatus(t *testing.T) {
	root := t.TempDir()
	c := tool.NewContext(tool.Context{Workspace: root, TempDir: root, Home: root})
	launcher := "/usr/local/bin/jean2"
	cases := []struct {
		name    string
		st      sandbox.Status
		why     string // what unconfined says ("" : confined)
		err     string // what unconfined and command refuse with
		through bool   // the command goes through the launcher
		belt    bool   // with a Seatbelt profile
	}{
		{"darwin seatbelt", sandbox.Status{Mode: sandbox.ModeAuto, OS: "darwin", Seatbelt: true, Launcher: launcher}, "", "", true, true},
		{"darwin require", sandbox.Status{Mode: sandbox.ModeRequire, OS: "darwin", Seatbelt: true, Launcher: launcher}, "", "", true, true},
		{"darwin without sandbox-exec", sandbox.Status{Mode: sandbox.ModeAuto, OS: "darwin", SeatbeltError: "/usr/bin/sandbox-exec: no such file", Launcher: launcher},
			"Seatbelt is not available here (/usr/bin/sandbox-exec: no such file)", "", false, false},
		{"darwin require without sandbox-exec", sandbox.Status{Mode: sandbox.ModeRequire, OS: "darwin", SeatbeltError: "gone"}, "", "cannot be confined with Seatbelt: gone", false, false},
		{"darwin landlock", sandbox.Status{Mode: sandbox.ModeLandlock, OS: "darwin", Seatbelt: true, Launcher: launcher}, "", "Landlock exists only on Linux", false, false},
		{"linux landlock", sandbox.Status{Mode: sandbox.ModeAuto, OS: "linux", LandlockABI: 4, Launcher: launcher}, "", "", true, false},
		{"linux without landlock", sandbox.Status{Mode: sandbox.ModeAuto, OS: "linux", LandlockError: "not in this kernel"},
			"Landlock is not available here (not in this kernel)", "", false, false},
		{"windows", sandbox.Status{Mode: sandbox.ModeAuto, OS: "windows"}, "", "JEAN2_SANDBOX=off", false, false},
		{"off", sandbox.Status{Mode: sandbox.ModeOff, OS: "darwin", Seatbelt: true, Launcher: launcher}, "", "", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := preset(t, tc.st, ShellOptions{})
			why, err := s.unconfined()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("unconfined: %q, %v; want an error holding %q", why, err, tc.err)
				}
				if _, err := s.command(c, "/bin/bash", "true", root, nil, nil, nil); err == nil {
					t.Fatal("the command was built anyway")
				}
				return
			}
			if err != nil || why != tc.why {
				t.Fatalf("unconfined: %q, %v; want %q", why, err, tc.why)
			}
			cf, err := s.command(c, "/bin/bash", "true", root, nil, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cf.closeNet()
			if through := cf.cmd.Path == launcher; through != tc.through {
				t.Fatalf("through the launcher: %v, want %v (%s)", through, tc.through, cf.cmd.Path)
			}
			if !tc.through {
				return
			}
			spec, _ := decode(t, cf.cmd.Args)
			if (spec.Seatbelt != nil) != tc.belt || spec.Landlock == tc.belt {
				t.Errorf("spec %+v: Seatbelt %v wanted", spec, tc.belt)
			}
		})
	}
}

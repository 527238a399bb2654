package host

import (
	"bufio"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/sandbox"
)

var updateSeatbelt = flag.Bool("update-seatbelt", false, "rewrite the golden Seatbelt profiles in testdata/seatbelt")

// sbValues are the values of a profile's parameters whose names are prefix and a number.
func sbValues(s *sandbox.SeatbeltProfile, prefix string) []string {
	var out []string
	for _, p := range s.Params {
		if rest, ok := strings.CutPrefix(p.Name, prefix); ok && !strings.Contains(rest, "_") {
			out = append(out, p.Value)
		}
	}
	return out
}

// The profile of a dependency install on macOS, in macOS paths that do not exist here
// (go test ./host -run TestInstallSeatbeltGolden -update-seatbelt rewrites it): the tool's
// folder, the runtime and the system's programs read, the install's folders written (npm's
// cache lies in jean2's home, which is otherwise denied), the credential folders denied,
// the network only the registry proxy's port. That sandbox-exec accepts it and npm, node-gyp
// and cc run under it only a Mac can tell (docs/security.md).
func TestInstallSeatbeltGolden(t *testing.T) {
	const home, jean2 = "/Users/ada", "/Users/ada/.jean2"
	protected := policy.ProtectedPaths(home, jean2, jean2+"/tools")
	var system []string // less /bin and /sbin, links to /usr here (see builtin's golden test)
	for _, d := range sandbox.SeatbeltPrograms() {
		if d != "/bin" && d != "/sbin" {
			system = append(system, d)
		}
	}
	folder := jean2 + "/tools/weather"
	writable := []string{jean2 + "/cache/install/weather-1", jean2 + "/cache/install/private-1", jean2 + "/cache/npm-cache", jean2 + "/cache/bun-cache"}
	plan := installPlan("/opt/homebrew/Cellar/bun/1.1.30/bin/bun", append([]string{"/opt/homebrew/Cellar/bun/1.1.30"}, system...),
		[]string{folder, folder + "/vendor/x.tgz"}, writable, protected)
	s, err := plan.Seatbelt(51234)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(s.Profile)
	b.WriteString("\n;;; parameters (sandbox-exec -D)\n")
	for _, p := range s.Params {
		b.WriteString(";;; " + p.Name + "=" + p.Value + "\n")
	}
	file := filepath.Join("testdata", "seatbelt", "install.sb")
	if *updateSeatbelt {
		if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	} else if want, err := os.ReadFile(file); err != nil {
		t.Fatalf("%v (run with -update-seatbelt to make it)", err)
	} else if string(want) != b.String() {
		t.Errorf("the profile differs from %s (run with -update-seatbelt if the change is meant):\n%s", file, b.String())
	}
	for _, w := range writable {
		if !slices.Contains(sbValues(&s, "WRITE_"), w) {
			t.Errorf("%s is not writable", w)
		}
	}
	if !slices.Contains(sbValues(&s, "READ_"), folder) || slices.Contains(sbValues(&s, "WRITE_"), folder) {
		t.Errorf("the tool's folder is not read-only: reads %v", sbValues(&s, "READ_"))
	}
	for _, d := range []string{jean2, home + "/.npmrc", home + "/.ssh"} {
		if !slices.Contains(sbValues(&s, "PROTECTED_"), d) {
			t.Errorf("%s is not denied", d)
		}
	}
	if !strings.Contains(s.Profile, `(allow network-outbound (remote ip "localhost:51234"))`) || strings.Count(s.Profile, "network-outbound") != 1 {
		t.Errorf("the network is not the proxy's port alone:\n%s", s.Profile)
	}
}

// On macOS with sandbox-exec, an install goes through the launcher with a Seatbelt profile
// (no Landlock rules, no namespace) whose one network rule is the port of a registry proxy
// on this machine's loopback, and that proxy refuses any host but the registry. Everything
// but sandbox-exec runs here.
func TestInstallSeatbeltSpec(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	folder := filepath.Join(root, "tools", "t")
	scratch := filepath.Join(root, "scratch")
	launcher := "/Applications/jean2.app/Contents/MacOS/jean2"
	h := &Host{home: filepath.Join(home, ".jean2"), log: slog.New(slog.DiscardHandler), sb: &hostSandbox{
		status:    sandbox.Status{Mode: sandbox.ModeAuto, OS: "darwin", Seatbelt: true, Launcher: launcher, NetNSError: "network namespaces exist only on Linux"},
		limits:    Limits{MaxTasks: 10},
		protected: policy.ProtectedPaths(home, filepath.Join(home, ".jean2"), filepath.Join(root, "tools")),
	}}
	cmd := exec.Command("/bin/true", "install")
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	release, err := h.confineInstall(cmd, []string{folder}, []string{scratch})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if cmd.Path != launcher {
		t.Fatalf("the installer runs %s, not through the launcher", cmd.Path)
	}
	i := slices.Index(cmd.Args, "--spec")
	if i < 0 {
		t.Fatalf("no spec in %q", cmd.Args)
	}
	spec, err := sandbox.DecodeSpec(cmd.Args[i+1])
	if err != nil {
		t.Fatal(err)
	}
	if spec.Seatbelt == nil || spec.Landlock || len(spec.Rules) > 0 || spec.NetNS != "" || spec.ProxyPort != 0 {
		t.Fatalf("spec %+v: want a Seatbelt profile and nothing of Linux", spec)
	}
	if spec.DataMB != InstallMemoryMB || spec.NProcExtra != 10 {
		t.Errorf("limits: dataMB %d, nprocExtra %d", spec.DataMB, spec.NProcExtra)
	}
	if !slices.Contains(sbValues(spec.Seatbelt, "WRITE_"), policy.Real(scratch)) {
		t.Errorf("the scratch folder is not writable: %v", sbValues(spec.Seatbelt, "WRITE_"))
	}
	if !slices.Contains(sbValues(spec.Seatbelt, "PROTECTED_"), filepath.Join(home, ".npmrc")) {
		t.Errorf("~/.npmrc is not denied: %v", sbValues(spec.Seatbelt, "PROTECTED_"))
	}
	proxy := envValue(cmd.Env, "JEAN2_EGRESS_PROXY")
	_, port, _ := net.SplitHostPort(proxy)
	if p, _ := strconv.Atoi(port); p == 0 || !strings.Contains(spec.Seatbelt.Profile, `(remote ip "localhost:`+port+`")`) {
		t.Fatalf("the profile does not allow the proxy %q", proxy)
	}
	if envValue(cmd.Env, "npm_config_https_proxy") != "http://"+proxy {
		t.Errorf("npm is not led to the proxy: %q", cmd.Env)
	}
	for target, want := range map[string]string{"evil.example:443": "403", "registry.npmjs.org:8443": "403"} {
		conn, err := net.Dial("tcp", proxy)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
		line, err := bufio.NewReader(conn).ReadString('\n')
		conn.Close()
		if err != nil || !strings.Contains(line, want) {
			t.Errorf("CONNECT %s: %q, %v; want %s", target, line, err, want)
		}
	}
}

// Without sandbox-exec (or with the sandbox off) no proxy is opened and no profile made.
func TestInstallDarwinWithoutSeatbelt(t *testing.T) {
	h := &Host{home: t.TempDir(), log: slog.New(slog.DiscardHandler), sb: &hostSandbox{status: sandbox.Status{Mode: sandbox.ModeAuto, OS: "darwin", Launcher: "/x/jean2", SeatbeltError: "gone"}}}
	cmd := exec.Command("/bin/true")
	exit, err := h.installExit(cmd)
	if err != nil || exit != nil {
		t.Fatalf("an exit was opened: %v, %v", exit, err)
	}
	spec, err := h.installSpec(cmd, []string{t.TempDir()}, nil, nil)
	if err != nil || spec.Seatbelt != nil || spec.Landlock {
		t.Fatalf("spec %+v, %v", spec, err)
	}
}

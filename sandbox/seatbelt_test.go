package sandbox

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jean2/jean2/policy"
)

var updateSeatbelt = flag.Bool("update", false, "rewrite the golden Seatbelt profiles in testdata/seatbelt")

// The paths of these plans do not exist on the machine that runs the tests (macOS paths
// on Linux; not /bin, which may be a link to /usr/bin), so policy.Real leaves them as they
// are and the profiles do not depend on the machine.
const (
	sbHome  = "/Users/ada"
	sbJean2 = sbHome + "/.jean2"
	sbNode  = "/opt/homebrew/Cellar/node/22.1.0/bin/node"
)

// seatbeltPlans are the plans the Linux tests give Landlock (sandbox_test.go,
// plan_sealed_test.go, host's workers), in macOS paths.
func seatbeltPlans() map[string]struct {
	plan Plan
	port int
} {
	protected := policy.ProtectedPaths(sbHome, sbJean2, sbJean2+"/tools")
	tmp := sbJean2 + "/tmp/sessions/s1"
	return map[string]struct {
		plan Plan
		port int
	}{
		// TestSandboxConfinesFiles: cat with a workspace.
		"cat-workspace": {Plan{Program: "/Users/ada/bin/cat", ReadWrite: []string{"/Users/ada/dir/ws"}}, 0},
		// TestSandboxChildProcess: a shell that may start programs.
		"shell-child-process": {Plan{Program: "/opt/homebrew/bin/bash", ReadWrite: []string{"/Users/ada/dir/ws"}, ChildProcess: true}, 0},
		// TestPlanCarvesProtectedPaths: the workspace is the home folder.
		"home-workspace": {Plan{
			ReadWrite:     []string{sbHome, tmp},
			Program:       sbNode,
			ReadOnly:      []string{sbJean2 + "/tools/x"},
			DeclaredRead:  []string{sbJean2 + "/.env", "/Users/ada/elsewhere"},
			DeclaredWrite: []string{sbJean2},
			Protected:     protected,
		}, 0},
		// A Node tool worker as the host plans it (host/sandbox.go plan): runtime, tool
		// folder, bundle and worker script in jean2's cache, workspace, session folder,
		// sealed .jean2, network through the proxy.
		"node-worker": {Plan{
			Program:     sbNode,
			RuntimeRoot: "/opt/homebrew/Cellar/node/22.1.0",
			ReadOnly:    []string{sbJean2 + "/tools/weather"},
			Modules:     []string{sbJean2 + "/cache/bundles/weather-1a2b.mjs", sbJean2 + "/cache/runtime/worker-ef1b.mjs"},
			ReadWrite:   []string{"/Users/ada/src/app", tmp},
			Sealed:      []string{"/Users/ada/src/app/.jean2"},
			Protected:   protected,
		}, 43127},
		// plan_sealed_test.go "above": a declared write above the workspace.
		"sealed-above": {Plan{
			Program:       sbNode,
			ReadWrite:     []string{"/Users/ada/root/ws"},
			DeclaredWrite: []string{"/Users/ada/root"},
			Sealed:        []string{"/Users/ada/root/ws/.jean2"},
			Protected:     []string{"/Users/ada/root/home/.jean2"},
		}, 0},
	}
}

// The profiles of the plans the Linux tests use, compared with testdata/seatbelt/*.sb
// (go test ./sandbox -run TestSeatbeltGolden -update rewrites them). Each file is the
// profile, then the parameters as sandbox-exec receives them.
func TestSeatbeltGolden(t *testing.T) {
	for name, c := range seatbeltPlans() {
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
		if *updateSeatbelt {
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
	}
}

// sbParams maps each parameter's name to its value.
func sbParams(s SeatbeltProfile) map[string]string {
	m := map[string]string{}
	for _, p := range s.Params {
		m[p.Name] = p.Value
	}
	return m
}

// forms are the top-level forms of a profile, each on one line (comments dropped).
func forms(profile string) []string {
	var out []string
	depth, cur := 0, strings.Builder{}
	for _, line := range strings.Split(profile, "\n") {
		if i := strings.Index(line, ";"); i >= 0 && !strings.Contains(line[:i], `"`) {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if cur.Len() > 0 {
			cur.WriteString(" ")
		}
		cur.WriteString(line)
		depth += strings.Count(line, "(") - strings.Count(line, ")")
		if depth == 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	return out
}

// namesOf returns the parameters whose value is path.
func namesOf(params map[string]string, path string) []string {
	var out []string
	for n, v := range params {
		if v == path {
			out = append(out, n)
		}
	}
	return out
}

// grantName is the parameter of a granted root (READ_3, WRITE_0), not of what is cut out
// of one (WRITE_0_EXCEPT_2).
var grantName = regexp.MustCompile(`^(READ|WRITE)_[0-9]+$`)

// jean2's home and the credential folders are denied even when a readable, writable root
// holds them (the workspace is the home folder): each grant cuts them out, and the last
// rule of the profile denies them again, keeping only the session's folder the caller put
// inside.
func TestSeatbeltDeniesProtectedInsideGrants(t *testing.T) {
	c := seatbeltPlans()["home-workspace"]
	s, err := c.plan.Seatbelt(0)
	if err != nil {
		t.Fatal(err)
	}
	params := sbParams(s)
	fs := forms(s.Profile)
	last := fs[len(fs)-1]
	deny := ""
	for _, f := range fs {
		if strings.HasPrefix(f, "(deny file-read* file-write* process-exec") {
			deny = f
		}
	}
	if deny == "" {
		t.Fatalf("no deny of the protected paths:\n%s", s.Profile)
	}
	if !strings.HasPrefix(last, "(allow file-read-metadata (literal") && last != deny {
		t.Errorf("the deny of protected paths is not last (only the lookup of the folders above kept places may follow): %s", last)
	}
	for _, q := range append([]string{sbJean2, sbJean2 + "/tools"}, policy.CredentialPaths(sbHome)...) {
		names := namesOf(params, q)
		if len(names) == 0 {
			t.Errorf("%s is not in the profile", q)
			continue
		}
		denied := false
		for _, n := range names {
			if strings.HasPrefix(n, "PROTECTED_") && !strings.Contains(n, "KEEP") && strings.Contains(deny, `(param "`+n+`")`) {
				denied = true
			}
			if grantName.MatchString(n) {
				t.Errorf("%s is granted as %s", q, n)
			}
		}
		if !denied {
			t.Errorf("%s is not denied at the end: %s", q, deny)
		}
	}
	// The home folder is granted with every protected path inside it cut out.
	home := ""
	for _, n := range namesOf(params, sbHome) {
		if strings.HasPrefix(n, "WRITE_") {
			home = n
		}
	}
	if home == "" {
		t.Fatalf("the workspace %s is not writable", sbHome)
	}
	for _, q := range append([]string{sbJean2}, policy.CredentialPaths(sbHome)...) {
		cut := false
		for _, n := range namesOf(params, q) {
			if strings.HasPrefix(n, home+"_EXCEPT_") && strings.Contains(s.Profile, `(require-not (subpath (param "`+n+`")))`) {
				cut = true
			}
		}
		if !cut {
			t.Errorf("the grant of %s does not cut out %s", sbHome, q)
		}
	}
	// The declared read of .env and the declared write of jean2's home are dropped; the
	// session folder inside it stays writable, kept out of the final deny.
	for _, p := range []string{sbJean2 + "/.env"} {
		if len(namesOf(params, p)) > 0 {
			t.Errorf("the declared %s is in the profile: %v", p, namesOf(params, p))
		}
	}
	tmp := sbJean2 + "/tmp/sessions/s1"
	kept := false
	for _, n := range namesOf(params, tmp) {
		if strings.Contains(n, "_KEEP_") && strings.Contains(deny, `(require-not (subpath (param "`+n+`")))`) {
			kept = true
		}
	}
	if !kept {
		t.Errorf("the session folder %s is not kept out of the deny: %s", tmp, deny)
	}
}

// No network but the egress proxy's port on localhost, and none at all without a proxy:
// no rule allows any other network operation (no bind, no inbound, no UNIX socket).
func TestSeatbeltNetworkOnlyToProxy(t *testing.T) {
	plan := seatbeltPlans()["node-worker"].plan
	allowNet := regexp.MustCompile(`\(allow [^()]*network`)
	for _, port := range []int{0, 43127} {
		s, err := plan.Seatbelt(port)
		if err != nil {
			t.Fatal(err)
		}
		var nets []string
		for _, f := range forms(s.Profile) {
			if allowNet.MatchString(f) || strings.Contains(f, "(allow default") || strings.Contains(f, "system-socket") {
				nets = append(nets, f)
			}
		}
		switch {
		case port == 0 && len(nets) > 0:
			t.Errorf("without a proxy the profile allows network: %q", nets)
		case port != 0 && !slices.Equal(nets, []string{`(allow network-outbound (remote ip "localhost:43127"))`}):
			t.Errorf("with a proxy on 43127 the network rules are %q", nets)
		}
	}
	if _, err := plan.Seatbelt(70000); err == nil {
		t.Error("port 70000 was accepted")
	}
}

// Each workspace's .jean2 is denied every write, its making included, even where a write
// grant above holds it; reading it stays allowed.
func TestSeatbeltSealsSettings(t *testing.T) {
	for _, name := range []string{"node-worker", "sealed-above"} {
		c := seatbeltPlans()[name]
		s, err := c.plan.Seatbelt(c.port)
		if err != nil {
			t.Fatal(err)
		}
		params := sbParams(s)
		sealed := c.plan.Sealed[0]
		var deny string
		for _, f := range forms(s.Profile) {
			if strings.HasPrefix(f, "(deny file-write*") {
				deny = f
			}
		}
		ok := false
		for _, n := range namesOf(params, sealed) {
			if strings.Contains(deny, `(literal (param "`+n+`")) (subpath (param "`+n+`"))`) {
				ok = true
			}
		}
		if !ok {
			t.Errorf("%s: %s is not denied writes (literal and subpath): %s", name, sealed, deny)
		}
		// The deny comes after every write grant (the last matching rule wins).
		if strings.LastIndex(s.Profile, "(allow file-write*") > strings.Index(s.Profile, "(deny file-write*") {
			t.Errorf("%s: a write grant follows the seal", name)
		}
	}
}

// Without childProcess the worker may execute its program and nothing else, and may not
// fork; with it, it may fork and execute what it can read.
func TestSeatbeltChildProcess(t *testing.T) {
	plans := seatbeltPlans()
	s, err := plans["cat-workspace"].plan.Seatbelt(0)
	if err != nil {
		t.Fatal(err)
	}
	var execs []string
	for _, f := range forms(s.Profile) {
		if strings.Contains(f, "process-fork") {
			t.Errorf("fork allowed without childProcess: %s", f)
		}
		if strings.HasPrefix(f, "(allow") && strings.Contains(f, "process-exec") {
			execs = append(execs, f)
		}
	}
	if !slices.Equal(execs, []string{`(allow process-exec (literal (param "PROGRAM")))`}) || sbParams(s)["PROGRAM"] != "/Users/ada/bin/cat" {
		t.Errorf("process-exec rules without childProcess: %q", execs)
	}
	s, err = plans["shell-child-process"].plan.Seatbelt(0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.Profile, "(allow process-fork)") || !strings.Contains(s.Profile, `(subpath "/usr/bin")`) {
		t.Errorf("childProcess does not allow starting programs:\n%s", s.Profile)
	}
}

// The folders of a worker's modules may be listed even when they lie in jean2's home (the
// bundle and worker script live in its cache): the final deny of the protected paths keeps
// out those listings, as it keeps out the granted places inside them.
func TestSeatbeltModuleFoldersListableInsideProtected(t *testing.T) {
	c := seatbeltPlans()["node-worker"]
	s, err := c.plan.Seatbelt(c.port)
	if err != nil {
		t.Fatal(err)
	}
	params := sbParams(s)
	var deny string
	for _, f := range forms(s.Profile) {
		if strings.HasPrefix(f, "(deny file-read* file-write* process-exec") {
			deny = f
		}
	}
	for _, m := range c.plan.Modules {
		dir := filepath.Dir(m)
		kept := false
		for _, n := range namesOf(params, dir) {
			if strings.Contains(deny, `(require-not (literal (param "`+n+`")))`) {
				kept = true
			}
		}
		if !kept {
			t.Errorf("the listing of %s is denied at the end: %s", dir, deny)
		}
	}
}

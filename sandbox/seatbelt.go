package sandbox

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/jean2/jean2/policy"
)

// SeatbeltExec is the program that applies a Seatbelt profile on macOS and executes a
// command under it. Only this path is used, never one found on PATH: a program placed
// earlier on PATH would run the worker unconfined.
const SeatbeltExec = "/usr/bin/sandbox-exec"

// SeatbeltProfile is a macOS sandbox profile (SBPL) made from a Plan, with the parameters that
// carry its paths. Paths never enter the profile's text: each is a parameter, given to
// sandbox-exec as -DNAME=value and named in the profile as (param "NAME"), so no character
// of a path (a quote, a parenthesis, a newline) can end a string and add a rule. The
// profile's text depends only on the shape of the plan.
type SeatbeltProfile struct {
	Profile string          `json:"profile"`
	Params  []SeatbeltParam `json:"params,omitempty"`
}

// SeatbeltParam is one -DNAME=value of sandbox-exec.
type SeatbeltParam struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Args are sandbox-exec's arguments that run program with args under the profile.
func (s SeatbeltProfile) Args(program string, args []string) []string {
	out := make([]string, 0, 4+len(s.Params)+len(args))
	out = append(out, "-p", s.Profile)
	for _, p := range s.Params {
		out = append(out, "-D"+p.Name+"="+p.Value)
	}
	out = append(out, "--", program)
	return append(out, args...)
}

// Check reports the first thing wrong with a profile: sandbox-exec takes its arguments
// as C strings, so no NUL; parameter names are ours (upper case, digits, _) and values
// absolute paths.
func (s SeatbeltProfile) Check() error {
	if strings.TrimSpace(s.Profile) == "" || strings.ContainsRune(s.Profile, 0) {
		return fmt.Errorf("seatbelt profile: empty or holds a NUL byte")
	}
	for _, p := range s.Params {
		if !validParamName(p.Name) {
			return fmt.Errorf("seatbelt parameter %q: names are upper-case letters, digits and _", p.Name)
		}
		if !filepath.IsAbs(p.Value) || strings.ContainsRune(p.Value, 0) {
			return fmt.Errorf("seatbelt parameter %s=%q: the value must be an absolute path without NUL", p.Name, p.Value)
		}
	}
	return nil
}

func validParamName(n string) bool {
	if n == "" || n[0] < 'A' || n[0] > 'Z' {
		return false
	}
	for _, c := range n {
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

// sbRoot is a folder (or file) granted with the protected paths inside it cut out.
type sbRoot struct {
	path   string
	except []string
}

// Seatbelt makes the macOS profile of the plan: what Rules grants on Linux, said in SBPL
// (docs/security.md, "macOS and Windows"). proxyPort is the egress proxy's port on
// localhost, the only network the worker gets; 0 gives it none.
//
// Where Landlock needs the plan carved into many rules (a grant adds up, nothing can be
// taken back), Seatbelt says it directly: a folder that holds something protected is
// granted with (require-not (subpath …)) for each protected path in it, and at the end of
// the profile (the last matching rule wins) every protected path is denied again, but for
// the granted folders the caller put inside it (the session's temporary folder lies in
// jean2's home). Sealed paths (each workspace's .jean2) are readable and never writable,
// whether they exist yet or not.
func (p Plan) Seatbelt(proxyPort int) (SeatbeltProfile, error) {
	if err := p.checkSeatbeltInput(proxyPort); err != nil {
		return SeatbeltProfile{}, err
	}
	pl := p.seatbeltPlaces()
	g := sbGen{params: map[string]string{}}
	var b strings.Builder
	b.WriteString(seatbeltHeader)
	g.writeExec(&b, pl.program, p.ChildProcess)
	g.writeFileGrants(&b, pl, p.ChildProcess)
	writeNetwork(&b, proxyPort)
	g.writeSealed(&b, pl.sealed)
	g.writeProtected(&b, pl)
	s := SeatbeltProfile{Profile: b.String(), Params: g.list}
	return s, s.Check()
}

// checkSeatbeltInput refuses a plan no profile can be made of: a relative program, a port
// out of range, a path holding a NUL byte.
func (p Plan) checkSeatbeltInput(proxyPort int) error {
	if p.Program == "" || !filepath.IsAbs(p.Program) {
		return fmt.Errorf("seatbelt: the program %q must be an absolute path", p.Program)
	}
	if proxyPort < 0 || proxyPort > 65535 {
		return fmt.Errorf("seatbelt: proxy port %d is not a port", proxyPort)
	}
	var bad []string
	for _, l := range [][]string{{p.Program, p.RuntimeRoot}, p.ReadOnly, p.Modules, p.ReadWrite, p.DeclaredRead, p.DeclaredWrite, p.Protected, p.Sealed, p.MountSealed} {
		for _, x := range l {
			if strings.ContainsRune(x, 0) {
				bad = append(bad, strconv.Quote(x))
			}
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("seatbelt: paths hold a NUL byte: %s", strings.Join(bad, ", "))
	}
	return nil
}

// sbPlaces is the plan in Seatbelt's terms: real paths, each once, the protected ones cut
// out of the grants that hold them.
type sbPlaces struct {
	program       string
	protected     []string // as given and where they lead
	reads, writes []sbRoot
	lists         []string // the folders of modules: their listing only
	sealed        []string // as given and where they lead
}

// sbReal is where x leads: Seatbelt matches the real path of what is opened.
func sbReal(x string) string { return policy.Real(filepath.Clean(x)) }

// seatbeltPlaces gathers the plan's places. Protected paths are kept as given and where
// they lead: Seatbelt matches the real path of what is opened, and a rule on the path as
// given costs nothing.
func (p Plan) seatbeltPlaces() *sbPlaces {
	pl := &sbPlaces{program: sbReal(p.Program)}
	for _, x := range p.Protected {
		if x == "" || !filepath.IsAbs(x) {
			continue
		}
		for _, y := range []string{filepath.Clean(x), policy.Real(x)} {
			if !slices.Contains(pl.protected, y) {
				pl.protected = append(pl.protected, y)
			}
		}
	}
	pl.add(&pl.reads, p.Program, false)
	pl.add(&pl.reads, p.RuntimeRoot, false)
	for _, x := range p.ReadOnly {
		pl.add(&pl.reads, x, false)
	}
	for _, x := range p.Modules {
		pl.add(&pl.reads, x, false)
		if x != "" && filepath.IsAbs(x) {
			d := sbReal(filepath.Dir(x))
			if !pl.isProtected(d, false) && !slices.Contains(pl.lists, d) {
				pl.lists = append(pl.lists, d)
			}
		}
	}
	for _, x := range p.ReadWrite {
		pl.add(&pl.reads, x, false)
		pl.add(&pl.writes, x, false)
	}
	// Declared paths inside a protected one are dropped whole; the plan's own places are
	// granted with the protected paths inside them cut out.
	for _, x := range p.DeclaredRead {
		pl.add(&pl.reads, x, true)
	}
	for _, x := range p.DeclaredWrite {
		pl.add(&pl.reads, x, true)
		pl.add(&pl.writes, x, true)
	}
	for _, x := range append(slices.Clone(p.Sealed), p.MountSealed...) {
		if x != "" && filepath.IsAbs(x) {
			for _, y := range []string{filepath.Clean(x), sbReal(x)} {
				if !slices.Contains(pl.sealed, y) {
					pl.sealed = append(pl.sealed, y)
				}
			}
		}
	}
	return pl
}

// isProtected reports whether x is protected (or, with dropInside, lies in a protected path).
func (pl *sbPlaces) isProtected(x string, dropInside bool) bool {
	for _, q := range pl.protected {
		if x == q || (dropInside && policy.Within(x, q)) {
			return true
		}
	}
	return false
}

// add grants x (its real path, once) on list, unless it is protected.
func (pl *sbPlaces) add(list *[]sbRoot, x string, dropInside bool) {
	if x == "" || !filepath.IsAbs(x) {
		return
	}
	x = sbReal(x)
	if pl.isProtected(x, dropInside) {
		return
	}
	if slices.ContainsFunc(*list, func(r sbRoot) bool { return r.path == x }) {
		return
	}
	r := sbRoot{path: x}
	for _, q := range pl.protected {
		if q != x && policy.Within(q, x) {
			r.except = append(r.except, q)
		}
	}
	*list = append(*list, r)
}

// writeExec allows the program the worker runs, and with childProcess the system's programs.
func (g *sbGen) writeExec(b *strings.Builder, program string, childProcess bool) {
	b.WriteString("\n; The program the worker runs.\n")
	fmt.Fprintf(b, "(allow process-exec (literal %s))\n", g.param("PROGRAM", program))
	if childProcess {
		b.WriteString("\n; childProcess was declared and approved: the worker may start programs it can read.\n")
		b.WriteString("(allow process-fork)\n")
		b.WriteString("(allow process-exec (subpath \"/bin\") (subpath \"/sbin\") (subpath \"/usr/bin\") (subpath \"/usr/sbin\") (subpath \"/usr/libexec\"))\n")
	}
}

// writeFileGrants allows reading, listing and writing the plan's places; with childProcess,
// running what it may write or read.
func (g *sbGen) writeFileGrants(b *strings.Builder, pl *sbPlaces, childProcess bool) {
	b.WriteString("\n; What the plan lets the worker read: its runtime, its own files, the call's places and\n; what was declared and approved, less what is protected inside them.\n")
	b.WriteString("(allow file-read* file-map-executable")
	g.writeRoots(b, "READ", pl.reads)
	b.WriteString(")\n")
	if len(pl.lists) > 0 {
		b.WriteString("\n; The folders of its modules: their listing only (Bun opens a module's folder).\n(allow file-read-data")
		for i, d := range pl.lists {
			fmt.Fprintf(b, "\n  (literal %s)", g.param(fmt.Sprintf("LIST_%d", i), d))
		}
		b.WriteString(")\n")
	}
	if len(pl.writes) > 0 {
		b.WriteString("\n; What it may write: the call's workspace, its allowed paths, the session's folder and\n; approved declarations, less what is protected inside them.\n(allow file-write*")
		g.writeRoots(b, "WRITE", pl.writes)
		b.WriteString(")\n")
		if childProcess {
			b.WriteString("(allow process-exec")
			g.writeRoots(b, "WRITE", pl.writes)
			b.WriteString(")\n")
		}
	}
	if childProcess && len(pl.reads) > 0 {
		b.WriteString("(allow process-exec")
		g.writeRoots(b, "READ", pl.reads)
		b.WriteString(")\n")
	}
}

// writeRoots writes the filters of roots, one a line, their parameters named prefix_i.
func (g *sbGen) writeRoots(b *strings.Builder, prefix string, roots []sbRoot) {
	for i, r := range roots {
		b.WriteString("\n  " + g.rootFilter(fmt.Sprintf("%s_%d", prefix, i), r))
	}
}

// writeNetwork allows only the egress proxy on localhost, or no network when there is none.
func writeNetwork(b *strings.Builder, proxyPort int) {
	b.WriteString("\n; Network: ")
	if proxyPort > 0 {
		fmt.Fprintf(b, "only the egress proxy on this machine, which allows the hosts the tool declared\n; and a person approved.\n(allow network-outbound (remote ip \"localhost:%d\"))\n", proxyPort)
	} else {
		b.WriteString("none.\n")
	}
}

// writeSealed denies every change to the sealed paths.
func (g *sbGen) writeSealed(b *strings.Builder, sealed []string) {
	if len(sealed) == 0 {
		return
	}
	b.WriteString("\n; Sealed: each workspace's .jean2 (its mcp.json names commands jean2 starts outside any\n; sandbox) is never written, made, renamed or removed by the worker.\n(deny file-write*")
	for i, x := range sealed {
		n := g.param(fmt.Sprintf("SEALED_%d", i), x)
		fmt.Fprintf(b, "\n  (literal %s) (subpath %s)", n, n)
	}
	b.WriteString(")\n")
}

// writeProtected denies the protected paths last, so that no rule above can grant them, but
// for the granted places inside them, whose parent folders may then be looked up.
func (g *sbGen) writeProtected(b *strings.Builder, pl *sbPlaces) {
	if len(pl.protected) == 0 {
		return
	}
	b.WriteString("\n; Protected: jean2's home, the tools folder and the credential folders of the user's home,\n; denied last so that no rule above can grant them, but for places the caller put inside\n; (the session's folder, the worker's modules and their folders' listing), whose parent\n; folders may only be looked up.\n")
	b.WriteString("(deny file-read* file-write* process-exec")
	var inside []string
	for i, q := range pl.protected {
		inside = g.writeProtectedPath(b, pl, i, q, inside)
	}
	b.WriteString(")\n")
	if len(inside) > 0 {
		b.WriteString("(allow file-read-metadata")
		for i, d := range inside {
			fmt.Fprintf(b, "\n  (literal %s)", g.param(fmt.Sprintf("PATH_TO_KEPT_%d", i), d))
		}
		b.WriteString(")\n")
	}
}

// writeProtectedPath writes the deny filter of protected path q (the i-th): all of it, or
// all but the granted places and module folders inside it. It returns inside with the
// folders on the way to those places added.
func (g *sbGen) writeProtectedPath(b *strings.Builder, pl *sbPlaces, i int, q string, inside []string) []string {
	n := g.param(fmt.Sprintf("PROTECTED_%d", i), q)
	var keep []string
	for _, r := range append(slices.Clone(pl.reads), pl.writes...) {
		if r.path != q && policy.Within(r.path, q) && !slices.Contains(keep, r.path) {
			keep = append(keep, r.path)
		}
	}
	var listed []string
	for _, d := range pl.lists {
		if d != q && policy.Within(d, q) {
			listed = append(listed, d)
		}
	}
	if len(keep) == 0 && len(listed) == 0 {
		fmt.Fprintf(b, "\n  (literal %s) (subpath %s)", n, n)
		return inside
	}
	fmt.Fprintf(b, "\n  (require-all (subpath %s)", n)
	for j, d := range listed {
		fmt.Fprintf(b, " (require-not (literal %s))", g.param(fmt.Sprintf("PROTECTED_%d_LIST_%d", i, j), d))
	}
	for j, k := range append(keep, listed...) {
		if j < len(keep) {
			fmt.Fprintf(b, " (require-not (subpath %s))", g.param(fmt.Sprintf("PROTECTED_%d_KEEP_%d", i, j), k))
		}
		for d := filepath.Dir(k); d != q && policy.Within(d, q); d = filepath.Dir(d) {
			if !slices.Contains(inside, d) {
				inside = append(inside, d)
			}
		}
		if !slices.Contains(inside, q) {
			inside = append(inside, q)
		}
	}
	b.WriteString(")")
	return inside
}

// SeatbeltPrograms are the folders of macOS's programs outside what every profile reads
// (seatbeltHeader): /bin and /usr/bin, Homebrew's /opt/homebrew and /usr/local, /etc's
// configuration, and the command line tools git and cc run from (/usr/bin/git is a shim
// that asks xcode-select where they are). The shell's commands and dependency installs,
// which start programs, read them; workers read only their runtime.
func SeatbeltPrograms() []string {
	return []string{"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/libexec", "/usr/local", "/opt",
		"/private/etc", "/Library/Developer/CommandLineTools", "/Applications/Xcode.app",
		"/private/var/db/xcode_select_link"}
}

// sbGen hands out parameters: each path once per name.
type sbGen struct {
	params map[string]string
	list   []SeatbeltParam
}

// param names value as the parameter name and returns the SBPL that reads it.
func (g *sbGen) param(name, value string) string {
	if _, ok := g.params[name]; !ok {
		g.params[name] = value
		g.list = append(g.list, SeatbeltParam{Name: name, Value: value})
	}
	return `(param "` + name + `")`
}

// rootFilter is the SBPL filter of a granted root: its subtree, less the protected paths
// inside it (the path itself and what is below: subpath alone may leave the making of the
// path itself open).
func (g *sbGen) rootFilter(name string, r sbRoot) string {
	n := g.param(name, r.path)
	if len(r.except) == 0 {
		return "(subpath " + n + ")"
	}
	var b strings.Builder
	b.WriteString("(require-all (subpath " + n + ")")
	for i, x := range r.except {
		e := g.param(fmt.Sprintf("%s_EXCEPT_%d", name, i), x)
		b.WriteString(" (require-not (literal " + e + ")) (require-not (subpath " + e + "))")
	}
	b.WriteString(")")
	return b.String()
}

// seatbeltHeader is what every worker gets from the system, whatever its plan: closed by
// default; the system's libraries, frameworks and shared files readable (and mappable as
// code); the devices a runtime opens; the few sysctls, Mach services and process
// operations Node, Bun and Go programs use at start. Facts from the profiles Codex and
// Anthropic's sandbox-runtime use (both derived from Chrome's); the text is our own.
const seatbeltHeader = `(version 1)
; jean2 tool worker, made from its sandbox plan (sandbox/seatbelt.go). Every path is a
; parameter (-D), never part of this text.
(deny default)

; Its own process: signals and information within this sandbox only.
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))
; libuv's os.cpus() asks the host port.
(allow mach-host*)

; Metadata (stat) anywhere, as on Linux where Landlock does not govern it: Node resolves
; every folder above a module. Contents need the rules below; protected paths are denied
; their metadata too, at the end.
(allow file-read-metadata)

; The system: libraries, frameworks, shared data, time zones; the root folder (getcwd).
(allow file-read* file-map-executable
  (subpath "/usr/lib")
  (subpath "/System/Library/Frameworks")
  (subpath "/System/Library/PrivateFrameworks")
  (subpath "/System/Library/Extensions")
  (subpath "/Library/Apple/usr/lib")
  (subpath "/Library/Apple/System/Library"))
(allow file-read*
  (literal "/")
  (subpath "/usr/share")
  (subpath "/System/Library/CoreServices")
  (subpath "/private/var/db/timezone")
  (literal "/private/etc/localtime")
  (literal "/private/etc/hosts")
  (literal "/private/etc/services")
  (literal "/private/etc/protocols")
  (literal "/private/etc/passwd")
  (literal "/private/etc/group")
  (subpath "/private/etc/ssl"))

; Devices.
(allow file-read* file-write-data file-ioctl
  (literal "/dev/null")
  (literal "/dev/zero")
  (literal "/dev/dtracehelper"))
(allow file-read*
  (literal "/dev/random")
  (literal "/dev/urandom"))
(allow file-read-data file-write-data (subpath "/dev/fd"))

; Facts about the machine that runtimes read at start.
(allow sysctl-read
  (sysctl-name-prefix "hw.")
  (sysctl-name-prefix "machdep.cpu.")
  (sysctl-name-prefix "kern.proc.pid.")
  (sysctl-name "kern.argmax")
  (sysctl-name "kern.hostname")
  (sysctl-name "kern.maxfiles")
  (sysctl-name "kern.maxfilesperproc")
  (sysctl-name "kern.maxproc")
  (sysctl-name "kern.ngroups")
  (sysctl-name "kern.osproductversion")
  (sysctl-name "kern.osrelease")
  (sysctl-name "kern.ostype")
  (sysctl-name "kern.osvariant_status")
  (sysctl-name "kern.osversion")
  (sysctl-name "kern.secure_kernel")
  (sysctl-name "kern.usrstack64")
  (sysctl-name "kern.version")
  (sysctl-name "sysctl.proc_cputype")
  (sysctl-name "vm.loadavg"))

; The user database (os.userInfo, getpwuid) and certificate evaluation (Go's crypto/x509).
(allow mach-lookup
  (global-name "com.apple.system.opendirectoryd.libinfo")
  (global-name "com.apple.trustd.agent"))
`

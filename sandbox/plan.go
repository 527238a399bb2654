package sandbox

import (
	"debug/elf"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jean2/jean2/policy"
)

// Plan is what one worker needs, in the host's words; Rules turns it into file rules. Every
// path is absolute.
type Plan struct {
	// Program is the executable the worker runs: node, bun, or a Go tool's binary. It (and
	// the dynamic loader it names) may be executed even when nothing else may.
	Program string
	// RuntimeRoot is a folder of the runtime's own files, readable ("" for none).
	RuntimeRoot string
	// ReadOnly are the tool's folder and anything else the worker only reads.
	ReadOnly []string
	// Modules are the files the runtime loads (bundle, worker script): readable, and their
	// folders listable (Bun opens the folder of a module to resolve its imports; a listing
	// shows names only). They need not exist yet when the plan is made.
	Modules []string
	// ReadWrite are the call's workspace, its allowed paths and the session's temporary
	// folder.
	ReadWrite []string
	// DeclaredRead and DeclaredWrite are the paths the tool declared and a person approved.
	DeclaredRead, DeclaredWrite []string
	// ChildProcess lets the worker execute programs (declared and approved).
	ChildProcess bool
	// Protected are never granted, even when a granted folder holds them: jean2's home (its
	// .env, database, grants, other tools), the tools folder, credential folders of the
	// user's home. A grant of a folder that holds one is narrowed to its other entries; a
	// declared path inside one is dropped. The workspace, allowed paths and temporary folder
	// the caller gives may lie inside one (the session's temporary folder does): the caller
	// chose them.
	Protected []string
	// Sealed are paths the worker may read but never change, whether they exist yet or not:
	// a workspace's .jean2, whose mcp.json names commands jean2 starts outside any sandbox.
	// Landlock grants add up and reach everything below a folder, so a write grant of a
	// folder holding one becomes read on that folder plus the write grant on each of its
	// other entries: the worker cannot make, remove or rename entries directly in that
	// folder (ctx.fs, done by the host, still can), nor create the sealed path. It is the
	// fallback where the launcher cannot seal them by a mount (MountSealed).
	Sealed []string
	// MountSealed are sealed folders the launcher mounts read-only over themselves
	// (Spec.SealedDirs): the grant of the folder that holds one stays whole (the mount
	// cannot be removed, renamed or replaced), a grant on or inside one is read only, and a
	// write grant of a folder above the one that holds it is narrowed as for Sealed, down
	// to that folder: renaming the workspace away and making a new one with its own .jean2
	// would step around the mount.
	MountSealed []string
	// Resolver resolves the plan's paths (nil: policy.Real): one made for the plan looks at
	// each folder once, however many of its paths pass through it.
	Resolver *policy.Resolver
	// Binds show a folder at another path in the view (a tool's data folder at
	// $JEAN2_HOME/data) and grant it there. Only where the launcher builds a view: without
	// one the target is the machine's own folder.
	Binds []Bind
	// Tmp is the folder the view shows at /tmp, read-write (the session's temporary folder,
	// the worker's TMPDIR), for programs that write to /tmp by name. Only where the
	// launcher builds a view, and not when a place the plan names lies in /tmp (View).
	Tmp string
}

// CredentialPaths are places in a home folder that hold keys and tokens; the host protects
// them even when a workspace is the home folder itself. The list is policy's
// (policy.CredentialPaths), the one ctx.fs, the server and the sandbox share.
func CredentialPaths(home string) []string { return policy.CredentialPaths(home) }

// Rules computes the worker's file rules: the system's libraries, certificates and resolver
// files and a few devices (read), the runtime (read, execute), the tool's own files (read),
// the call's places (read, write), what was declared and approved — and nothing of what is
// protected.
func (p Plan) Rules() []Rule {
	protected := make([]string, 0, len(p.Protected))
	for _, x := range p.Protected {
		if x != "" {
			protected = append(protected, p.Resolver.Real(filepath.Clean(x)))
		}
	}
	clean := func(paths []string) []string {
		out := make([]string, 0, len(paths))
		for _, x := range paths {
			if x != "" && filepath.IsAbs(x) {
				out = append(out, p.Resolver.Real(filepath.Clean(x)))
			}
		}
		return out
	}
	sealed, mounted := clean(p.Sealed), clean(p.MountSealed)
	pinned := make([]string, 0, len(mounted))
	for _, x := range mounted {
		pinned = append(pinned, filepath.Dir(x))
	}
	var out []Rule
	add := func(path string, a Access, optional, dropInside bool) {
		if path == "" || !filepath.IsAbs(path) {
			return
		}
		if p.ChildProcess && a&(Read|Write) != 0 {
			a |= Exec
		}
		out = append(out, carve(Rule{Path: p.Resolver.Real(filepath.Clean(path)), Access: a, Optional: optional, Exact: true}, protected, seals{sealed, mounted, pinned}, dropInside)...)
	}
	for _, r := range systemRules() {
		if p.ChildProcess && r.Access&Read != 0 {
			r.Access |= Exec
		}
		out = append(out, r)
	}
	if p.Program != "" {
		prog := p.Resolver.Real(p.Program)
		out = append(out, Rule{Path: prog, Access: Read | Exec})
		if interp := elfInterpreter(prog); interp != "" {
			out = append(out, Rule{Path: p.Resolver.Real(interp), Access: Read | Exec, Optional: true})
		}
	}
	add(p.RuntimeRoot, Read, true, false)
	for _, x := range p.ReadOnly {
		add(x, Read, false, false)
	}
	for _, x := range p.Modules {
		add(x, Read, false, false)
		add(filepath.Dir(x), List, true, false)
	}
	for _, x := range p.ReadWrite {
		if !p.systemPlace(x) {
			add(x, Read|Write, true, false)
		}
	}
	for _, b := range p.Binds {
		a := Read
		if b.Write {
			a |= Write
		}
		// The target lies in a hidden place (jean2's home): granted as the caller chose it,
		// like the session's folder.
		out = append(out, Rule{Path: b.Target, Access: a, Exact: true})
	}
	for _, x := range p.DeclaredRead {
		add(x, Read, true, true)
	}
	for _, x := range p.DeclaredWrite {
		if !p.systemPlace(x) {
			add(x, Read|Write, true, true)
		}
	}
	return dedupe(out)
}

// systemPlace reports whether a folder to be granted read-write really is (links
// resolved) the root or lies in a system folder no tool may touch (policy.BlockedRoots; a
// folder below /root, root's home, excepted): a workspace or session folder a hostile tool
// replaced by a link to "/", /etc or /usr/bin before the plan was made. ctx.fs never touches
// those places either. Such a grant is dropped.
func (p Plan) systemPlace(x string) bool {
	if x == "" || !filepath.IsAbs(x) {
		return false
	}
	return SystemPlace(p.Resolver.Real(filepath.Clean(x)))
}

// SystemPlace reports whether the absolute path x, as written, is the root or lies in a
// system folder that a tool's writes are never granted (Plan drops such grants).
func SystemPlace(x string) bool {
	x = filepath.Clean(x)
	if x == string(filepath.Separator) {
		return true
	}
	return policy.BlockedAsWritten(x) && !policy.Within(x, "/root")
}

// seals are what carve keeps from being written: sealed paths (by Landlock alone), paths
// sealed by a mount, and the folders that hold those (pinned: they may not be renamed or
// removed, which needs a write grant of the folder above).
type seals struct {
	sealed, mounted, pinned []string
}

// carve narrows a rule so that nothing protected is granted and nothing sealed is
// writable. A rule on a protected path, or (with dropInside) inside one, grants nothing; a
// rule on or inside a sealed or mounted path keeps only its reading. A rule on a folder that
// holds a protected or sealed path, or a pinned one below it, becomes a listing of that
// folder (plus reading, when nothing protected is inside: reading may reach them) and the
// same rule on each of its other entries, recursively. Entries that are symbolic links are
// left out: one could lead into what is protected. Entries made after the worker starts are
// not covered.
func carve(r Rule, protected []string, s seals, dropInside bool) []Rule {
	var inner []string
	for _, x := range protected {
		if x == r.Path || (dropInside && policy.Within(r.Path, x)) {
			return nil
		}
		if policy.Within(x, r.Path) {
			inner = append(inner, x)
		}
	}
	for _, x := range append(slices.Clone(s.sealed), s.mounted...) {
		if policy.Within(r.Path, x) {
			// On or inside a sealed path: read only. Exec stays off too (nothing there is
			// the worker's to run).
			r.Access &^= Write | Exec | Device
			if r.Access == 0 {
				return nil
			}
			s = seals{}
			break
		}
	}
	var below seals
	if r.Access&Write != 0 {
		for _, x := range s.sealed {
			if policy.Within(x, r.Path) {
				below.sealed = append(below.sealed, x)
			}
		}
		for _, x := range s.pinned {
			if x != r.Path && policy.Within(x, r.Path) {
				below.pinned = append(below.pinned, x)
			}
		}
	}
	for _, x := range s.mounted {
		if policy.Within(x, r.Path) {
			below.mounted = append(below.mounted, x)
		}
	}
	if len(inner) == 0 && len(below.sealed) == 0 && len(below.pinned) == 0 {
		return []Rule{r}
	}
	var out []Rule
	switch {
	case len(inner) > 0 && r.Access&(Read|Write) != 0:
		out = append(out, Rule{Path: r.Path, Access: List, Optional: true, Exact: r.Exact})
	case len(inner) == 0:
		out = append(out, Rule{Path: r.Path, Access: r.Access &^ (Write | Device), Optional: r.Optional, Exact: r.Exact})
	}
	entries, err := os.ReadDir(r.Path)
	if err != nil {
		return out
	}
	// Every rule travels in the launcher's one --spec argument (at most 128 KiB on Linux)
	// and costs a syscall: when only sealed paths are inside and the folder has very many
	// entries, its files stay read-only to the worker's own fs (ctx.fs still writes them)
	// and only its first maxCarvedEntries subfolders keep their grant.
	many := len(inner) == 0 && len(entries) > maxCarvedEntries
	kept := 0
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink != 0 {
			continue
		}
		if many && (!e.IsDir() || kept >= maxCarvedEntries) {
			continue
		}
		kept++
		out = append(out, carve(Rule{Path: filepath.Join(r.Path, e.Name()), Access: r.Access, Optional: true, Exact: r.Exact}, inner, below, dropInside)...)
	}
	return out
}

// maxCarvedEntries bounds the rules a folder holding a sealed path is carved into.
const maxCarvedEntries = 400

// dedupe merges rules on the same path (their access adds up; a rule is optional only when
// every source of it is).
func dedupe(rules []Rule) []Rule {
	idx := map[string]int{}
	var out []Rule
	for _, r := range rules {
		if i, ok := idx[r.Path]; ok {
			out[i].Access |= r.Access
			out[i].Optional = out[i].Optional && r.Optional
			out[i].Exact = out[i].Exact || r.Exact
			continue
		}
		idx[r.Path] = len(out)
		out = append(out, r)
	}
	return out
}

// systemRules are what any runtime needs from the system, each optional since distributions
// differ: libraries and programs (read; executing them needs the childProcess permission),
// the certificates, resolver and time zone files, the few /proc and /sys files runtimes
// read about themselves and the machine, and harmless devices. Not /etc as a whole, not
// /home, not /tmp, not /run.
func systemRules() []Rule {
	var out []Rule
	read := func(a Access, paths ...string) {
		for _, p := range paths {
			out = append(out, Rule{Path: p, Access: a, Optional: true})
		}
	}
	read(Read, "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin")
	read(Read, "/etc/ssl", "/etc/pki", "/etc/ca-certificates", "/etc/ca-certificates.conf", "/etc/crypto-policies",
		"/etc/resolv.conf", "/etc/hosts", "/etc/host.conf", "/etc/nsswitch.conf", "/etc/gai.conf",
		"/etc/services", "/etc/protocols", "/etc/localtime", "/etc/timezone", "/etc/ld.so.cache",
		"/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/os-release", "/etc/passwd", "/etc/group", "/etc/mime.types")
	read(Read, procRules...)
	read(Read, "/sys/devices/system/cpu", "/sys/fs/cgroup", "/sys/kernel/mm/transparent_hugepage")
	read(Read|Write|Device, "/dev/null")
	read(Read, "/dev/zero", "/dev/urandom", "/dev/random", "/dev/full")
	return out
}

// procRules are the /proc entries a worker may read. /proc/self names the launcher's own
// folder when the rule is made, which stays the worker's after the exec; other processes'
// folders are not granted (and Landlock refuses ptrace-like access to processes outside
// the domain anyway, so /proc/<host pid>/environ stays closed whatever the rules).
var procRules = []string{"/proc/self", "/proc/thread-self", "/proc/meminfo", "/proc/cpuinfo", "/proc/stat", "/proc/loadavg",
	"/proc/uptime", "/proc/version", "/proc/filesystems", "/proc/sys/kernel", "/proc/sys/vm/overcommit_memory",
	"/proc/sys/net/core/somaxconn"}

// elfInterpreter returns the dynamic loader an ELF executable names (PT_INTERP), or "" for
// a static binary or anything that is not ELF.
func elfInterpreter(path string) string {
	f, err := elf.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, prog.Filesz)
		if _, err := prog.ReadAt(b, 0); err != nil {
			return ""
		}
		s := strings.TrimRight(string(b), "\x00")
		if filepath.IsAbs(s) {
			return s
		}
	}
	return ""
}

// RuntimeRoot is the installation folder of a runtime binary: the parent of its bin folder
// (Node's lib/ beside bin/), else its own folder. A root that would be "/" or would hold
// the user's home is narrowed to the binary's folder.
func RuntimeRoot(binary, home string) string {
	real := policy.Real(binary)
	dir := filepath.Dir(real)
	root := dir
	if filepath.Base(dir) == "bin" {
		root = filepath.Dir(dir)
	}
	if root == "/" || (home != "" && policy.Within(policy.Real(home), root)) {
		root = dir
	}
	if dir == "/" || (home != "" && policy.Within(policy.Real(home), dir)) {
		return ""
	}
	return root
}

// Paths returns the paths of the rules that grant access (for reports).
func Paths(rules []Rule, a Access) []string {
	var out []string
	for _, r := range rules {
		if r.Access&a != 0 {
			out = append(out, r.Path)
		}
	}
	slices.Sort(out)
	return out
}

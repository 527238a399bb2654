package sandbox

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
)

// Access is what a rule lets a worker do with the files beneath a path.
type Access uint8

const (
	// Read lets it read files and list folders.
	Read Access = 1 << iota
	// Write lets it create, write, truncate, rename and remove files and folders.
	Write
	// Exec lets it execute files (start programs).
	Exec
	// List lets it list a folder's entries (and those of every folder beneath it) but not read
	// or change any file: what a folder that holds something protected gets, so that the
	// rest of it can still be granted entry by entry.
	List
	// Device lets it use ioctl on device files (/dev/null).
	Device
)

func (a Access) String() string {
	var parts []string
	for _, x := range []struct {
		bit  Access
		name string
	}{{Read, "read"}, {Write, "write"}, {Exec, "exec"}, {List, "list"}, {Device, "device"}} {
		if a&x.bit != 0 {
			parts = append(parts, x.name)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "+")
}

// Rule grants access beneath one path (the path itself when it is a file).
type Rule struct {
	Path   string `json:"path"`
	Access Access `json:"access"`
	// Optional rules are skipped when the path does not exist (system files that vary
	// between distributions); a missing required path fails the worker's start.
	Optional bool `json:"optional,omitempty"`
	// Exact rules name a path the planner resolved itself (no link on the way): the
	// launcher refuses the rule if the path leads anywhere else when it applies it, so a
	// folder a worker swapped for a link after the plan (a session's temporary folder, in
	// the folder a workspace's workers may write) grants nothing.
	Exact bool `json:"exact,omitempty"`
}

func (r Rule) String() string { return r.Access.String() + " " + r.Path }

// Spec is everything the launcher applies to itself before it executes the runtime. It
// travels as JSON on the launcher's command line: it holds paths and numbers, never a value
// of the environment.
type Spec struct {
	// Landlock applies Rules with Landlock; without it the rules are not enforced by the
	// launcher (Node's permission model may enforce them instead).
	Landlock bool   `json:"landlock,omitempty"`
	Rules    []Rule `json:"rules,omitempty"`
	// DataMB caps the worker's private writable memory (RLIMIT_DATA) in MiB; 0 sets no cap.
	DataMB int `json:"dataMB,omitempty"`
	// PidsCgroup is a folder of a pids cgroup hierarchy the launcher makes the worker's own
	// group in (w-<pid>); PidsMax caps the tasks (processes and threads) of that group, so
	// of the worker and everything it starts.
	PidsCgroup string `json:"pidsCgroup,omitempty"`
	PidsMax    int    `json:"pidsMax,omitempty"`
	// NProcExtra, when no cgroup is given, sets RLIMIT_NPROC to the tasks the user runs now
	// plus this many. The kernel counts every task of the user and ignores the limit for
	// root, so it is only a fallback.
	NProcExtra int `json:"nprocExtra,omitempty"`
	// NoFork refuses the worker the creation of processes (threads only), so that without
	// the childProcess permission no program can be started, not even through the runtime's
	// dynamic loader (see nofork_linux.go).
	NoFork bool `json:"noFork,omitempty"`

	// The launcher always drops every capability, locks the securebits and sets
	// no_new_privs (caps_linux.go); what follows is what the host chooses.

	// MemoryCgroup is a folder of a memory cgroup hierarchy the launcher makes the worker's
	// own group in (w-<pid>; one group with the pids one when both folders are the same);
	// MemoryMaxMB caps all the memory of that group, shared memory (memfd, MAP_SHARED)
	// included, which DataMB does not count.
	MemoryCgroup string `json:"memoryCgroup,omitempty"`
	MemoryMaxMB  int    `json:"memoryMaxMB,omitempty"`
	// FileMB caps the size of every file the worker writes (RLIMIT_FSIZE) in MiB; a write
	// past it fails with EFBIG. 0 sets no cap.
	FileMB int `json:"fileMB,omitempty"`
	// ExtraFDs is how many descriptors from 3 on the program receives (2 for a worker: the
	// protocol's pipes); every other descriptor above 2 is closed at exec.
	ExtraFDs int `json:"extraFDs,omitempty"`

	// SealedDirs are folders (a workspace root's .jean2) the worker may read but never
	// change: the launcher moves into a mount namespace of its own and mounts each read-only
	// over itself (mountns_linux.go). Each must be a real folder when the launcher starts
	// (PrepareSealDir), or the worker does not start.
	SealedDirs []string `json:"sealedDirs,omitempty"`

	// Network isolation (netns_linux.go). NetNS is a network namespace file the launcher
	// joins before anything else (a NetNS's Path): the worker and what it starts then have
	// no network but that namespace's loopback, where the host's egress proxy listens.
	NetNS string `json:"netns,omitempty"`
	// ProxyPort, where no namespace can be had, is the one TCP port the worker may connect
	// to (its egress proxy on the host's 127.0.0.1), by Landlock's network rules (ABI 4);
	// it may bind none. Weaker: the rule names a port, not an address, and UDP stays open.
	ProxyPort int `json:"proxyPort,omitempty"`

	// View, on Linux, is the filesystem the worker sees (view_linux.go): the machine read-only,
	// the call's writable places read-write, protected places replaced by empty ones. It
	// replaces SealedDirs (its ReadOnly places are sealed the same way).
	View *View `json:"view,omitempty"`

	// Seatbelt, on macOS, is the profile the launcher executes the program under, through
	// /usr/bin/sandbox-exec (seatbelt_darwin.go); it holds the file rules and the network
	// (Plan.Seatbelt), so Landlock, Rules, NetNS and ProxyPort are not used with it.
	Seatbelt *SeatbeltProfile `json:"seatbelt,omitempty"`
}

// View is the filesystem a confined process sees. The launcher builds it in a mount namespace
// of its own before Landlock: every mount of the machine read-only (so no write, and no change
// of mode, owner, times or extended attributes, reaches anything else: EROFS), Writable and
// Binds shown read-write, Hidden replaced by an empty read-only folder or file, ReadOnly
// shown read-only where a Hidden or Writable place holds them. Every path is absolute, clean
// and resolved by the planner: the launcher refuses one that leads through a symbolic link.
type View struct {
	// Writable places are shown read-write at their own path (a workspace, its allowed
	// paths, the session's temporary folder, an approved write); one inside a Hidden place is
	// shown again there.
	Writable []string `json:"writable,omitempty"`
	// ReadOnly places are shown read-only at their own path: a tool's own folder inside the
	// hidden tools folder, a workspace's .jean2 inside the writable workspace.
	ReadOnly []string `json:"readOnly,omitempty"`
	// Hidden places are replaced by an empty read-only folder (or file); missing ones are
	// skipped.
	Hidden []string `json:"hidden,omitempty"`
	// Binds show a folder at another path (a tool's data folder at $JEAN2_HOME/data).
	Binds []Bind `json:"binds,omitempty"`
	// ShmMB is the size of the private /dev/shm the view gets (0: 64 MiB); the machine's
	// own is never shared.
	ShmMB int `json:"shmMB,omitempty"`
}

// Bind shows Source at Target in a view, read-write when Write.
type Bind struct {
	Source string `json:"source"`
	Target string `json:"target"`
	Write  bool   `json:"write,omitempty"`
}

func cleanAbs(p string) bool {
	return filepath.IsAbs(p) && filepath.Clean(p) == p && !strings.ContainsRune(p, 0)
}

// Check reports the first thing wrong with a view.
func (v *View) Check() error {
	for _, group := range [][]string{v.Writable, v.ReadOnly, v.Hidden} {
		for _, p := range group {
			if !cleanAbs(p) || p == "/" {
				return fmt.Errorf("sandbox view: the path %q must be absolute, clean and not /", p)
			}
		}
	}
	for _, b := range v.Binds {
		if !cleanAbs(b.Source) || !cleanAbs(b.Target) || b.Target == "/" {
			return fmt.Errorf("sandbox view: the bind %q → %q must join absolute, clean paths", b.Source, b.Target)
		}
	}
	if v.ShmMB < 0 {
		return fmt.Errorf("sandbox view: shmMB %d must not be negative", v.ShmMB)
	}
	return nil
}

// Check reports the first thing wrong with a spec.
func (s Spec) Check() error {
	for _, r := range s.Rules {
		if !filepath.IsAbs(r.Path) || filepath.Clean(r.Path) != r.Path || strings.ContainsRune(r.Path, 0) {
			return fmt.Errorf("sandbox rule %q: the path must be absolute and clean", r.Path)
		}
		if r.Access == 0 || r.Access&^(Read|Write|Exec|List|Device) != 0 {
			return fmt.Errorf("sandbox rule %q: access %d is not valid", r.Path, r.Access)
		}
	}
	if s.DataMB < 0 || s.PidsMax < 0 || s.NProcExtra < 0 {
		return fmt.Errorf("sandbox limits must not be negative (dataMB %d, pidsMax %d, nprocExtra %d)", s.DataMB, s.PidsMax, s.NProcExtra)
	}
	if s.PidsCgroup != "" && (!filepath.IsAbs(s.PidsCgroup) || s.PidsMax == 0) {
		return fmt.Errorf("sandbox pids cgroup %q: give an absolute folder and a pidsMax", s.PidsCgroup)
	}
	if s.MemoryMaxMB < 0 || s.FileMB < 0 || s.ExtraFDs < 0 {
		return fmt.Errorf("sandbox limits must not be negative (memoryMaxMB %d, fileMB %d, extraFDs %d)", s.MemoryMaxMB, s.FileMB, s.ExtraFDs)
	}
	if s.MemoryCgroup != "" && (!filepath.IsAbs(s.MemoryCgroup) || s.MemoryMaxMB == 0) {
		return fmt.Errorf("sandbox memory cgroup %q: give an absolute folder and a memoryMaxMB", s.MemoryCgroup)
	}
	for _, d := range s.SealedDirs {
		if !filepath.IsAbs(d) || filepath.Clean(d) != d || strings.ContainsRune(d, 0) || d == "/" {
			return fmt.Errorf("sandbox sealed folder %q: the path must be absolute and clean", d)
		}
	}
	if s.ProxyPort < 0 || s.ProxyPort > 65535 {
		return fmt.Errorf("sandbox proxy port %d is not a port", s.ProxyPort)
	}
	if s.NetNS != "" && (!filepath.IsAbs(s.NetNS) || filepath.Clean(s.NetNS) != s.NetNS) {
		return fmt.Errorf("sandbox network namespace %q: the path must be absolute and clean", s.NetNS)
	}
	if s.View != nil {
		if err := s.View.Check(); err != nil {
			return err
		}
	}
	if s.Seatbelt != nil {
		if s.Landlock || s.NetNS != "" || s.View != nil {
			return fmt.Errorf("sandbox spec: a Seatbelt profile does not go with Landlock, a network namespace or a view")
		}
		return s.Seatbelt.Check()
	}
	return nil
}

// Encode returns the spec as the launcher's --spec argument.
func (s Spec) Encode() (string, error) {
	if err := s.Check(); err != nil {
		return "", err
	}
	b, err := json.Marshal(s)
	if err != nil {
		return "", fmt.Errorf("encode sandbox spec: %w", err)
	}
	return string(b), nil
}

// DecodeSpec reads a --spec argument.
func DecodeSpec(text string) (Spec, error) {
	var s Spec
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Spec{}, fmt.Errorf("sandbox spec is not valid JSON: %w", err)
	}
	if dec.More() {
		return Spec{}, fmt.Errorf("sandbox spec: unexpected data after the JSON object")
	}
	return s, s.Check()
}

// ExecArg is the hidden subcommand the jean2 binary answers as the launcher.
const ExecArg = "__sandbox-exec"

// Command returns the executable and arguments that start program with args under spec
// through launcher (the jean2 binary, or a test binary that answers ExecArg).
func Command(launcher string, spec Spec, program string, args []string) (string, []string, error) {
	text, err := spec.Encode()
	if err != nil {
		return "", nil, err
	}
	if !filepath.IsAbs(program) {
		return "", nil, fmt.Errorf("sandbox: the program %q must be an absolute path", program)
	}
	out := append([]string{ExecArg, "--spec", text, "--", program}, args...)
	return launcher, out, nil
}

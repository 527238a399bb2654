package sandbox

import (
	"fmt"
	"os"
	"runtime"
	"strings"
)

// Mode is how much protection a host asks for.
type Mode string

const (
	// ModeAuto takes the strongest protection the machine offers: Landlock when the
	// kernel has it and a launcher is given (Seatbelt on macOS), else Node's permission
	// model for Node workers; Bun and Go workers then run unconfined, with a warning. On
	// Windows, which has neither, it refuses to run tools: the person must choose off.
	ModeAuto Mode = "auto"
	// ModeLandlock requires Landlock: a worker that cannot have it does not start.
	ModeLandlock Mode = "landlock"
	// ModeNode uses Node's permission model for Node workers even where Landlock exists.
	ModeNode Mode = "node"
	// ModeOff confines nothing (the context's powers are still enforced by the host).
	ModeOff Mode = "off"
	// ModeRequire is ModeLandlock that also requires network isolation (a network
	// namespace per worker pool, egress only through the host's proxy): a worker that
	// cannot have both does not start. On macOS it requires Seatbelt, whose profile holds
	// both.
	ModeRequire Mode = "require"
)

// ParseMode reads a mode as people write it (JEAN2_SANDBOX); "" is ModeAuto.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case "":
		return ModeAuto, nil
	case ModeAuto, ModeLandlock, ModeNode, ModeOff, ModeRequire:
		return m, nil
	}
	return "", fmt.Errorf("sandbox mode %q is not known: use auto, landlock, require, node or off", s)
}

// Mechanism is what confines one worker.
type Mechanism string

const (
	Landlock        Mechanism = "landlock"
	NodePermissions Mechanism = "node-permissions"
	// Seatbelt is macOS's sandbox: the launcher executes the worker through
	// /usr/bin/sandbox-exec with a profile made from its plan (Plan.Seatbelt).
	Seatbelt   Mechanism = "seatbelt"
	Unconfined Mechanism = "none"
)

// Status is what this machine and host offer.
type Status struct {
	Mode Mode `json:"mode"`
	// OS is the system the host runs on (runtime.GOOS); "" is read as linux.
	OS string `json:"os,omitempty"`
	// Seatbelt is true on macOS when /usr/bin/sandbox-exec is there to confine workers;
	// SeatbeltError says why not.
	Seatbelt      bool   `json:"seatbelt,omitempty"`
	SeatbeltError string `json:"seatbeltError,omitempty"`
	// LandlockABI is the kernel's Landlock ABI version, 0 without Landlock.
	LandlockABI   int    `json:"landlockABI"`
	LandlockError string `json:"landlockError,omitempty"`
	// Launcher is the executable that applies Landlock and limits ("" when none is set).
	Launcher string `json:"launcher,omitempty"`
	// Pids says what caps the tasks of a worker: "cgroup <folder>", "rlimit" or "none".
	Pids string `json:"pids"`
	// Memory says what caps a worker's memory beside RLIMIT_DATA: "cgroup <folder>" (which
	// counts shared memory too) or why there is none.
	Memory string `json:"memory,omitempty"`

	// NetNS is true when workers get a network namespace of their own (through the
	// launcher), whose only way out is the host's egress proxy; NetNSError says why not.
	NetNS      bool   `json:"netns"`
	NetNSError string `json:"netnsError,omitempty"`
	// NetLandlock, without NetNS, is the fallback: Landlock (ABI 4) lets workers connect
	// over TCP to their proxy's port only (any address of that port, and UDP, stay open).
	NetLandlock bool `json:"netLandlock,omitempty"`

	// MountSeal is true when the launcher can build a view of the machine for each confined
	// process (view_linux.go: a mount namespace of its own, everything read-only but its
	// writable places, protected places hidden), which also seals each workspace root's
	// .jean2 with a read-only mount;
	// MountSealError says why not. Without it the seal is Landlock rules alone (Plan.Sealed),
	// which keep a worker from making new entries at the top of its workspace.
	MountSeal      bool   `json:"mountSeal"`
	MountSealError string `json:"mountSealError,omitempty"`

	// PidNS is true when the host starts each launcher in a pid namespace of its own, as its
	// init (pidns_linux.go): everything a confined process starts then dies with jean2,
	// kill -9 included. PidNSError says why not; then what a worker or command left running
	// lives until the next jean2 ends it.
	PidNS bool `json:"pidns"`
	// UserNS is true when the host is not root and starts each launcher in a user namespace
	// of its own (as the same user), which gives it the view and the pid namespace a root
	// host gets without one (pidns_linux.go InUserNamespace).
	UserNS     bool   `json:"userns,omitempty"`
	PidNSError string `json:"pidnsError,omitempty"`
}

// Probe reports what the kernel offers.
func Probe(mode Mode, launcher string) Status {
	st := Status{Mode: mode, OS: runtime.GOOS, Launcher: launcher, Pids: "none"}
	if st.OS != "linux" {
		return st.probeOther()
	}
	abi, err := LandlockABI()
	st.LandlockABI = abi
	if err != nil {
		st.LandlockError = err.Error()
	}
	switch {
	case mode == ModeOff:
		st.NetNSError = "sandbox mode off"
		st.MountSealError, st.PidNSError = st.NetNSError, st.NetNSError
	case launcher == "":
		st.NetNSError = "no launcher is configured (the jean2 binary moves workers into their namespace)"
		st.MountSealError, st.PidNSError = st.NetNSError, st.NetNSError
	default:
		st.probeNamespaces(launcher)
		if err := NetNSAvailable(); err != nil {
			st.NetNSError = err.Error()
			st.NetLandlock = LandlockNetwork()
		} else {
			st.NetNS = true
		}
	}
	return st
}

// probeNamespaces learns whether the launcher can build a view and be a pid namespace's
// init: as root directly; otherwise in a user namespace of its own, where the kernel
// allows one to an ordinary user.
func (st *Status) probeNamespaces(launcher string) {
	if os.Geteuid() != 0 {
		if err := MountSealAvailable(launcher, true); err != nil {
			st.MountSealError = "not root, and no user namespace: " + err.Error()
			st.PidNSError = st.MountSealError
			return
		}
		st.UserNS, st.MountSeal, st.PidNS = true, true, true
		return
	}
	if err := PidNSAvailable(); err != nil {
		st.PidNSError = err.Error()
	} else {
		st.PidNS = true
	}
	if err := MountSealAvailable(launcher, false); err != nil {
		st.MountSealError = err.Error()
	} else {
		st.MountSeal = true
	}
}

// probeOther is Probe outside Linux: on macOS, whether sandbox-exec is there (its profile
// then holds files and network alike); elsewhere nothing confines workers.
func (st Status) probeOther() Status {
	st.LandlockError = "Landlock exists only on Linux"
	st.NetNSError = "network namespaces exist only on Linux"
	st.MountSealError = "mount namespaces exist only on Linux"
	st.PidNSError = "pid namespaces exist only on Linux"
	if st.OS != "darwin" {
		st.SeatbeltError = "Seatbelt exists only on macOS"
		return st
	}
	switch err := SeatbeltAvailable(); {
	case st.Mode == ModeOff:
		st.SeatbeltError = "sandbox mode off"
	case err != nil:
		st.SeatbeltError = err.Error()
	case st.Launcher == "":
		st.SeatbeltError = "no launcher is configured (the jean2 binary starts workers through sandbox-exec)"
	default:
		st.Seatbelt = true
	}
	return st
}

// system is the OS the status describes.
func (st Status) system() string {
	if st.OS == "" {
		return "linux"
	}
	return st.OS
}

// Network says in one line what holds the network of confined workers.
func (st Status) Network() string {
	if st.system() == "darwin" && st.Seatbelt {
		return "no network but their egress proxy's port on localhost (the Seatbelt profile), egress only through the host's proxy, to the hosts a tool declares and a person approved"
	}
	if st.NetNS {
		return "no network of their own (a network namespace per worker pool, no UNIX sockets); egress only through the host's proxy, to the hosts a tool declares and a person approved"
	}
	if st.NetLandlock {
		return "held by Landlock to their egress proxy's TCP port (no network namespace: " + st.NetNSError + "); weaker: that port number on any machine, and UDP, stay reachable"
	}
	return "not isolated from the network (" + st.NetNSError + "): workers can connect anywhere this user can"
}

// Choose picks the mechanism for a worker of runtime kind ("node", "bun", "go"). An error
// means the mode cannot be met and the worker must not start.
func (st Status) Choose(kind string) (Mechanism, error) {
	switch st.system() {
	case "linux":
	case "darwin":
		return st.chooseDarwin(kind)
	default:
		return st.chooseUnconfinable(kind)
	}
	landlock := st.LandlockABI >= 1 && st.Launcher != ""
	switch st.Mode {
	case ModeOff:
		return Unconfined, nil
	case ModeLandlock:
		if !landlock {
			return "", fmt.Errorf("the sandbox mode is landlock but %s", st.whyNoLandlock())
		}
		return Landlock, nil
	case ModeRequire:
		if !landlock {
			return "", fmt.Errorf("the sandbox mode is require but %s", st.whyNoLandlock())
		}
		if !st.NetNS {
			return "", fmt.Errorf("the sandbox mode is require but workers cannot be isolated from the network: %s", st.NetNSError)
		}
		return Landlock, nil
	case ModeNode:
		if kind == "node" {
			return NodePermissions, nil
		}
		return Unconfined, nil
	}
	if landlock {
		return Landlock, nil
	}
	if kind == "node" {
		return NodePermissions, nil
	}
	return Unconfined, nil
}

// chooseDarwin is Choose on macOS: Seatbelt where sandbox-exec is there, else as on a
// Linux without Landlock.
func (st Status) chooseDarwin(kind string) (Mechanism, error) {
	switch st.Mode {
	case ModeOff:
		return Unconfined, nil
	case ModeLandlock:
		return "", fmt.Errorf("the sandbox mode is landlock but Landlock exists only on Linux; on macOS use auto or require, which confine workers with Seatbelt")
	case ModeRequire:
		if !st.Seatbelt {
			return "", fmt.Errorf("the sandbox mode is require but workers cannot be confined with Seatbelt: %s", st.SeatbeltError)
		}
		return Seatbelt, nil
	case ModeNode:
		if kind == "node" {
			return NodePermissions, nil
		}
		return Unconfined, nil
	}
	if st.Seatbelt {
		return Seatbelt, nil
	}
	if kind == "node" {
		return NodePermissions, nil
	}
	return Unconfined, nil
}

// WindowsAdvice is what a person on Windows (or another system jean2 cannot confine
// workers on) is told: the choice that is theirs to make, and the better way.
const WindowsAdvice = "set JEAN2_SANDBOX=off to run tools without OS confinement (ctx.fs, the environment and asks still hold; a tool's own code can then read and write whatever this user can), or run jean2 in WSL, where Landlock confines them"

// chooseUnconfinable is Choose where no OS confinement exists (Windows): workers run
// unconfined only when the person chose it (off), or Node's permission model when they
// chose node; auto, landlock and require refuse to run tools.
func (st Status) chooseUnconfinable(kind string) (Mechanism, error) {
	switch st.Mode {
	case ModeOff:
		return Unconfined, nil
	case ModeNode:
		if kind == "node" {
			return NodePermissions, nil
		}
		return Unconfined, nil
	}
	return "", fmt.Errorf("tools cannot be confined on %s (the sandbox mode is %s): %s", st.system(), st.Mode, WindowsAdvice)
}

// Seal says in a few words what a confined process sees of the machine: the view, or how the
// .jean2 folder of its workspace is kept from it where there is none.
func (st Status) Seal() string {
	if st.system() == "darwin" && st.Seatbelt {
		return "each workspace's .jean2 read-only by the Seatbelt profile"
	}
	if st.MountSeal {
		how := "a mount namespace per process"
		if st.UserNS {
			how += ", in a user namespace of its own as this user"
		}
		return "a view of the machine for every confined process (" + how + "): everything read-only but its own places, " +
			"jean2's home, the credential folders and the jean2 binary hidden, each workspace's .jean2 read-only"
	}
	return "each workspace's .jean2 read-only by Landlock rules alone (no mount namespace: " + st.MountSealError +
		"), so workers make new top-level entries of a workspace only through ctx.fs"
}

func (st Status) whyNoLandlock() string {
	if st.LandlockABI < 1 {
		if st.LandlockError != "" {
			return "Landlock is not available: " + st.LandlockError
		}
		return "Landlock is not available"
	}
	return "no launcher is configured (the jean2 binary applies Landlock)"
}

// Summary says in one line which protection workers get, for logs and jean2 doctor.
func (st Status) Summary() string {
	node, _ := st.Choose("node")
	other, err := st.Choose("bun")
	switch {
	case err != nil:
		return "none: " + err.Error()
	case node == Seatbelt:
		return "Seatbelt (" + SeatbeltExec + ") for every worker; " + st.Network() + "; " + st.Seal()
	case node == Landlock:
		net := "no network but the egress proxy"
		switch {
		case st.NetLandlock && !st.NetNS:
			net = "network only through the egress proxy's port (Landlock TCP rules; UDP open; no namespace: " + st.NetNSError + ")"
		case !st.NetNS:
			net = "network not isolated (" + st.NetNSError + ")"
		}
		return fmt.Sprintf("Landlock ABI %d for every worker; %s; %s", st.LandlockABI, net, st.Seal())
	case node == NodePermissions && other == Unconfined:
		why := "sandbox mode " + string(st.Mode)
		switch {
		case st.Mode == ModeAuto && st.system() == "darwin":
			why = "no Seatbelt: " + st.SeatbeltError
		case st.Mode == ModeAuto:
			why = st.whyNoLandlock()
		}
		return "Node's permission model for Node workers; Bun and Go workers are not confined (" + why + ")"
	case node == Unconfined:
		return "none (sandbox mode off): tools are held only to their context"
	}
	return string(node)
}

package sandbox

import (
	"fmt"
	"strings"
)

// Mode is how much protection a host asks for.
type Mode string

const (
	// ModeAuto takes the strongest protection the machine offers: Landlock when the
	// kernel has it and a launcher is given, else Node's permission model for Node
	// workers; Bun and Go workers then run unconfined, with a warning.
	ModeAuto Mode = "auto"
	// ModeLandlock requires Landlock: a worker that cannot have it does not start.
	ModeLandlock Mode = "landlock"
	// ModeNode uses Node's permission model for Node workers even where Landlock exists.
	ModeNode Mode = "node"
	// ModeOff confines nothing (the context's powers are still enforced by the host).
	ModeOff Mode = "off"
	// ModeRequire is ModeLandlock that also requires network isolation (a network
	// namespace per worker pool, egress only through the host's proxy): a worker that
	// cannot have both does not start.
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
	Unconfined      Mechanism = "none"
)

// Status is what this machine and host offer.
type Status struct {
	Mode Mode `json:"mode"`
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

	// MountSeal is true when the launcher can seal each workspace root's .jean2 with a
	// read-only mount in a mount namespace of the worker's own (mountns_linux.go);
	// MountSealError says why not. Without it the seal is Landlock rules alone (Plan.Sealed),
	// which keep a worker from making new entries at the top of its workspace.
	MountSeal      bool   `json:"mountSeal"`
	MountSealError string `json:"mountSealError,omitempty"`
}

// Probe reports what the kernel offers.
func Probe(mode Mode, launcher string) Status {
	st := Status{Mode: mode, Launcher: launcher, Pids: "none"}
	abi, err := LandlockABI()
	st.LandlockABI = abi
	if err != nil {
		st.LandlockError = err.Error()
	}
	switch {
	case mode == ModeOff:
		st.NetNSError = "sandbox mode off"
		st.MountSealError = st.NetNSError
	case launcher == "":
		st.NetNSError = "no launcher is configured (the jean2 binary moves workers into their namespace)"
		st.MountSealError = st.NetNSError
	default:
		if err := MountSealAvailable(launcher); err != nil {
			st.MountSealError = err.Error()
		} else {
			st.MountSeal = true
		}
		if err := NetNSAvailable(); err != nil {
			st.NetNSError = err.Error()
			st.NetLandlock = LandlockNetwork()
		} else {
			st.NetNS = true
		}
	}
	return st
}

// Network says in one line what holds the network of confined workers.
func (st Status) Network() string {
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

// Seal says in a few words how the .jean2 folder of a confined worker's workspace is kept
// from it.
func (st Status) Seal() string {
	if st.MountSeal {
		return "each workspace's .jean2 read-only by a mount (a mount namespace per worker)"
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
		if st.Mode == ModeAuto {
			why = st.whyNoLandlock()
		}
		return "Node's permission model for Node workers; Bun and Go workers are not confined (" + why + ")"
	case node == Unconfined:
		return "none (sandbox mode off): tools are held only to their context"
	}
	return string(node)
}

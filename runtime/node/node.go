// Package node runs bundled JavaScript tools in Node.js or Bun worker processes: it owns the
// worker script (worker.mjs, embedded), finds a suitable runtime, and describes how to start
// a worker for package worker's pool.
package node

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jean2/jean2/runtime/worker"
)

//go:embed worker.mjs
var script []byte

// Script returns the worker script.
func Script() []byte { return append([]byte(nil), script...) }

// ScriptHash is the content hash that names the written script.
func ScriptHash() string {
	sum := sha256.Sum256(script)
	return hex.EncodeToString(sum[:8])
}

// WriteScript writes the worker script to <cacheDir>/runtime/worker-<hash>.mjs, unless it
// is there already, and returns its path. The name changes with the content, so a running
// worker never sees its script replaced, and concurrent writers agree.
func WriteScript(cacheDir string) (string, error) {
	if cacheDir == "" {
		return "", errors.New("worker script: no cache directory given")
	}
	dir := filepath.Join(cacheDir, "runtime")
	path := filepath.Join(dir, "worker-"+ScriptHash()+".mjs")
	if b, err := os.ReadFile(path); err == nil && string(b) == string(script) {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("worker script: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".worker-*.mjs")
	if err != nil {
		return "", fmt.Errorf("worker script: %w", err)
	}
	_, werr := tmp.Write(script)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("worker script %s: %w", tmp.Name(), err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("worker script: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("worker script %s: %w", path, err)
	}
	return path, nil
}

// Runtime kinds.
const (
	KindNode = "node"
	KindBun  = "bun"
)

// Minimum versions the worker script supports.
var (
	minNode = version{20, 0, 0}
	minBun  = version{1, 1, 0}
)

// Runtime is a JavaScript runtime found on this machine.
type Runtime struct {
	Kind    string // KindNode or KindBun
	Path    string // absolute path of the executable
	Version string // e.g. 20.20.2
}

// Dir is the directory holding the runtime's executable (for a worker's PATH).
func (r Runtime) Dir() string { return filepath.Dir(r.Path) }

func (r Runtime) String() string { return r.Kind + " " + r.Version + " (" + r.Path + ")" }

// DetectOptions say where to look and what is wanted.
type DetectOptions struct {
	// Preference is "node", "bun" or "" (no preference: Node when it is usable, else Bun).
	// Callers pass the tool's own preference (package.json "jean2": {"runtime": …}) when it
	// has one, else JEAN2_RUNTIME.
	Preference string
	// NodePath and BunPath name the executables explicitly; empty means search PATH.
	NodePath string
	BunPath  string
	// PathEnv is the PATH to search; empty means the host's.
	PathEnv string
}

// Detect finds the runtime to use. With a preference only that runtime is considered; an
// unusable one (missing, too old) is an error that says what to install.
func Detect(opts DetectOptions) (Runtime, error) {
	pref := strings.ToLower(strings.TrimSpace(opts.Preference))
	var kinds []string
	switch pref {
	case "":
		kinds = []string{KindNode, KindBun}
	case KindNode, KindBun:
		kinds = []string{pref}
	default:
		return Runtime{}, fmt.Errorf("runtime preference %q is not known: use \"node\" or \"bun\"", opts.Preference)
	}
	var problems []string
	for _, kind := range kinds {
		rt, err := probe(kind, opts)
		if err == nil {
			return rt, nil
		}
		problems = append(problems, err.Error())
	}
	if pref != "" {
		return Runtime{}, errors.New(problems[0])
	}
	return Runtime{}, fmt.Errorf("no JavaScript runtime to run tools: %s; install Node.js ≥ %s (https://nodejs.org) or Bun ≥ %s (https://bun.sh)",
		strings.Join(problems, "; "), minNode.short(), minBun.short())
}

func probe(kind string, opts DetectOptions) (Runtime, error) {
	explicit, min, site, name := opts.NodePath, minNode, "https://nodejs.org", "Node.js"
	if kind == KindBun {
		explicit, min, site, name = opts.BunPath, minBun, "https://bun.sh", "Bun"
	}
	path := explicit
	if path == "" {
		var err error
		path, err = lookPath(kind, opts.PathEnv)
		if err != nil {
			return Runtime{}, fmt.Errorf("%s is not installed (no %q on PATH): install %s ≥ %s (%s)", name, kind, name, min.short(), site)
		}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return Runtime{}, fmt.Errorf("%s at %s: %w", name, path, err)
	}
	out, err := versionOf(abs)
	if err != nil {
		return Runtime{}, fmt.Errorf("%s at %s does not run: %w; install %s ≥ %s (%s)", name, abs, err, name, min.short(), site)
	}
	v, ok := parseVersion(out)
	if !ok {
		return Runtime{}, fmt.Errorf("%s at %s printed version %q, which is not a version number", name, abs, out)
	}
	if v.less(min) {
		return Runtime{}, fmt.Errorf("%s at %s is version %s, too old: jean2 needs %s ≥ %s (%s)", name, abs, v, name, min.short(), site)
	}
	return Runtime{Kind: kind, Path: abs, Version: v.String()}, nil
}

func lookPath(name, pathEnv string) (string, error) {
	if pathEnv == "" {
		return exec.LookPath(name)
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

func versionOf(path string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Env = []string{} // a runtime's version does not depend on the host's environment
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			return "", fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

type version [3]int

var versionPattern = regexp.MustCompile(`v?(\d+)\.(\d+)\.(\d+)`)

func parseVersion(s string) (version, bool) {
	m := versionPattern.FindStringSubmatch(s)
	if m == nil {
		return version{}, false
	}
	var v version
	for i := range 3 {
		n, err := strconv.Atoi(m[i+1])
		if err != nil {
			return version{}, false
		}
		v[i] = n
	}
	return v, true
}

func (v version) less(o version) bool {
	for i := range 3 {
		if v[i] != o[i] {
			return v[i] < o[i]
		}
	}
	return false
}

func (v version) String() string { return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2]) }
func (v version) short() string  { return fmt.Sprintf("%d.%d", v[0], v[1]) }

// MinBun is the oldest Bun jean2 runs tools on, as "1.1".
func MinBun() string { return minBun.short() }

// LauncherOptions describe the workers of one tool.
type LauncherOptions struct {
	// CacheDir receives the worker script (CacheDir/runtime/worker-<hash>.mjs).
	CacheDir string
	// Env is the worker's whole environment, computed by the host; nothing is inherited.
	Env []string
	// Dir is the worker's working directory (the tool's folder is a good choice).
	Dir string
	// MaxOldSpaceMB caps Node's heap (--max-old-space-size); 0 leaves Node's default. Bun has
	// no equivalent flag.
	MaxOldSpaceMB int
	// Flags are extra runtime flags put before the script (Node's permission model flags).
	Flags []string
}

// ScriptPath is where WriteScript puts the worker script under cacheDir.
func ScriptPath(cacheDir string) string {
	return filepath.Join(cacheDir, "runtime", "worker-"+ScriptHash()+".mjs")
}

// NewLauncher describes how to start a worker of rt. The script's path is known in advance
// (it is content-addressed); each start makes sure it is there and intact.
func NewLauncher(rt Runtime, opts LauncherOptions) worker.Launcher {
	scriptPath := ScriptPath(opts.CacheDir)
	var args []string
	if rt.Kind == KindBun {
		// No .env loading, no bunfig.toml, no installing packages behind the host's back.
		args = []string{"--no-install", "--no-env-file", "--config=" + os.DevNull, scriptPath}
	} else {
		args = []string{"--enable-source-maps", "--no-warnings"}
		if opts.MaxOldSpaceMB > 0 {
			args = append(args, "--max-old-space-size="+strconv.Itoa(opts.MaxOldSpaceMB))
		}
		args = append(args, opts.Flags...)
		args = append(args, scriptPath)
	}
	env := opts.Env
	if env == nil {
		env = []string{}
	}
	return worker.Launcher{
		Kind: rt.Kind, Path: rt.Path, Args: args, Env: env, Dir: opts.Dir,
		Prepare: func() error {
			_, err := WriteScript(opts.CacheDir) // a read and compare when it is there already
			return err
		},
	}
}

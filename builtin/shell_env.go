package builtin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/jean2/jean2/internal/fsutil"
	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/tool"
)

// A command works as in the person's terminal, within the sandbox: their PATH and the
// variables they configured, their toolchains read-only where they are installed, build and
// package caches that live on per workspace in jean2's home, and git under their name
// without their credentials. HOME stays the session's folder (writable, new each
// session): tools write dotfiles and caches below HOME, the person's own home is not
// writable and keeps their credentials (.npmrc, .netrc, git's helpers), and what one
// session's commands leave in HOME does not reach the next. The toolchains that find
// themselves through HOME are given their own variables instead (RUSTUP_HOME, PYENV_ROOT,
// GOENV, PYTHONUSERBASE).

// shellCacheVars are the caches a command writes, each in a folder of its own below
// $JEAN2_HOME/cache/shell/<workspace>/ (the folder names), and the variable that points
// the tool there. CARGO_HOME rather than CARGO_TARGET_DIR: cargo keeps its registry index
// and downloaded crates in CARGO_HOME (it has no separate cache variable), and the
// person's CARGO_HOME also holds their registry token (credentials.toml), which a command
// should not read; build output (target/) stays in the workspace, as the developer has it.
// XDG_CACHE_HOME catches the tools that follow it (pre-commit, golangci-lint, …).
var shellCacheVars = [...]struct{ name, dir string }{
	{"GOCACHE", "go-build"},
	{"GOMODCACHE", "go-mod"},
	{"npm_config_cache", "npm"},
	{"PIP_CACHE_DIR", "pip"},
	{"CARGO_HOME", "cargo"},
	{"XDG_CACHE_HOME", "cache"},
}

// shellOwnVars are set by jean2 whatever the person configured: where the command may
// write, and what keeps the person's git credentials out (the egress proxy's variables are
// added after all of these).
var shellOwnVars = [...]string{"PATH", "HOME", "TMPDIR", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_SYSTEM",
	"GOCACHE", "GOMODCACHE", "npm_config_cache", "PIP_CACHE_DIR", "CARGO_HOME", "XDG_CACHE_HOME"}

// shellHost is what the shell learns once from the person's own environment (the
// server's): the commands' PATH, where their Go keeps its modules and which proxy it uses,
// and the git configuration written for commands.
type shellHost struct {
	environ []string
	path    string
	goEnv   shellGoEnv
	// gitConfig is the global git configuration of commands: the person's name and email,
	// nothing else ("/dev/null" when it could not be written: git then has no identity).
	gitConfig string
	// err is why the git configuration could not be written (logged by each command).
	err error
}

// shellGoEnv is what `go env` says in the person's environment.
type shellGoEnv struct {
	GOROOT, GOPATH, GOMODCACHE, GOPROXY, GOENV string
}

// shellSetup is what a command gets from the person's environment: its variables, the
// folders it reads (toolchains, the git configuration) and the caches it writes.
type shellSetup struct {
	env      []string
	readOnly []string
	caches   []string
}

// learn finds out, once, what commands take from the person's environment. `go env` and
// `git config` run outside any workspace, with the server's environment.
func (s *shellSandbox) learn() *shellHost {
	s.hostOnce.Do(func() {
		h := &shellHost{environ: s.opts.Environ}
		if h.environ == nil {
			h.environ = os.Environ()
		}
		h.path = shellCommandPath(s.opts.Path, h.environ)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		h.goEnv = shellProbeGo(ctx, h.path, h.environ)
		name, email := s.opts.GitName, s.opts.GitEmail
		if name == "" {
			name = shellProbeGit(ctx, h.path, h.environ, "user.name")
		}
		if email == "" {
			email = shellProbeGit(ctx, h.path, h.environ, "user.email")
		}
		h.gitConfig = os.DevNull
		if s.opts.Layout.Cache != "" {
			if err := shellWriteGitConfig(s.opts.Layout.Cache, name, email); err != nil {
				h.err = err
			} else {
				h.gitConfig = filepath.Join(s.opts.Layout.Cache, "shell", "gitconfig")
			}
		}
		s.host = h
	})
	return s.host
}

// shellCommandPath is the commands' PATH: the configured one, else the server's, each
// without relative entries (".", "bin": they would name folders of the command's cwd);
// the system's folders when neither gives one.
func shellCommandPath(configured string, environ []string) string {
	path := configured
	if path == "" {
		path = shellLookupEnv(environ, "PATH")
	}
	var dirs []string
	for _, d := range filepath.SplitList(path) {
		if filepath.IsAbs(d) && !slices.Contains(dirs, filepath.Clean(d)) {
			dirs = append(dirs, filepath.Clean(d))
		}
	}
	if len(dirs) > 0 {
		return strings.Join(dirs, string(filepath.ListSeparator))
	}
	path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	if runtime.GOOS == "darwin" {
		path = "/opt/homebrew/bin:/opt/homebrew/sbin:" + path // Homebrew on Apple silicon
	}
	return path
}

func shellLookupEnv(environ []string, name string) string {
	value := ""
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			value = v // a later entry wins, as in exec.Cmd
		}
	}
	return value
}

// shellLookPath finds a program on path ("" when it is not there).
func shellLookPath(path, program string) string {
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, program)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// shellProbeGo asks the person's go where its modules are and which proxy it uses. In "/"
// with GOTOOLCHAIN=local, so no go.mod can make it fetch or run another toolchain.
func shellProbeGo(ctx context.Context, path string, environ []string) shellGoEnv {
	var g shellGoEnv
	goBin := shellLookPath(path, "go")
	if goBin == "" {
		return g
	}
	cmd := exec.CommandContext(ctx, goBin, "env", "-json", "GOROOT", "GOPATH", "GOMODCACHE", "GOPROXY", "GOENV")
	cmd.Dir, cmd.Env = "/", append(slices.Clone(environ), "PATH="+path, "GOTOOLCHAIN=local", "GOFLAGS=")
	out, err := cmd.Output()
	if err == nil {
		_ = json.Unmarshal(out, &g)
	}
	return g
}

// shellProbeGit reads one value of the person's global git configuration ("" when unset).
func shellProbeGit(ctx context.Context, path string, environ []string, key string) string {
	gitBin := shellLookPath(path, "git")
	if gitBin == "" {
		return ""
	}
	cmd := exec.CommandContext(ctx, gitBin, "config", "--global", "--get", key)
	cmd.Dir, cmd.Env = "/", append(slices.Clone(environ), "PATH="+path, "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// shellWriteGitConfig writes $JEAN2_HOME/cache/shell/gitconfig: the identity and nothing
// else of the person's configuration (no credential helper, no url rewrites with tokens).
// It is never a link (fsutil.ReplaceIn) and commands only read it.
func shellWriteGitConfig(cache, name, email string) error {
	if _, err := shellMakeDirs(cache, "shell"); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("# Written by jean2 for its shell's commands (GIT_CONFIG_GLOBAL): the person's identity, no credentials.\n")
	if name != "" || email != "" {
		b.WriteString("[user]\n")
		if name != "" {
			fmt.Fprintf(&b, "\tname = %s\n", shellGitQuote(name))
		}
		if email != "" {
			fmt.Fprintf(&b, "\temail = %s\n", shellGitQuote(email))
		}
	}
	if err := fsutil.ReplaceIn(filepath.Join(cache, "shell"), ".", "gitconfig", []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("shell: write the commands' git configuration: %w", err)
	}
	return nil
}

// shellGitQuote quotes a git configuration value; a line break, which git values cannot
// hold, becomes a space.
func shellGitQuote(v string) string {
	v = strings.NewReplacer("\r", " ", "\n", " ", "\x00", "").Replace(v)
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
}

// setup is what the command of call c takes from the person's environment.
func (s *shellSandbox) setup(c *tool.Context, res *policy.Resolver) (shellSetup, error) {
	h := s.learn()
	if h.err != nil {
		c.Logger.Warn("shell: commands run without the person's git identity", "err", h.err)
	}
	withheld, err := policy.ProviderKeyNames(s.opts.Layout.Home)
	if err != nil {
		return shellSetup{}, fmt.Errorf("shell: %w", err)
	}
	var caches []string
	vars := shellVars{}
	vars.set("TERM", "dumb")
	vars.set("LANG", "C.UTF-8")
	vars.set("NO_COLOR", "1")
	vars.set("GIT_TERMINAL_PROMPT", "0")
	vars.set("PAGER", "cat")
	vars.set("GIT_PAGER", "cat")
	// npm would ask the registry whether it is up to date after every script: a network
	// refusal (and a question to the person) for `npm test`.
	vars.set("npm_config_update_notifier", "false")
	vars.set("npm_config_fund", "false")
	s.personVars(vars, h.environ, withheld)
	s.toolchainVars(vars, c.Home, h.goEnv)
	vars.set("PATH", h.path)
	vars.set("HOME", c.TempDir)
	vars.set("TMPDIR", c.TempDir)
	vars.set("GIT_CONFIG_GLOBAL", h.gitConfig)
	vars.set("GIT_CONFIG_NOSYSTEM", "1")
	vars.unset("GIT_CONFIG_SYSTEM")
	if s.opts.Layout.Cache != "" && c.Workspace != "" {
		dirs, err := shellCaches(res, s.opts.Layout.Cache, c.Workspace)
		if err != nil {
			return shellSetup{}, err
		}
		for i, v := range shellCacheVars {
			vars.set(v.name, dirs[i])
		}
		caches = dirs
	}
	readOnly := shellToolchains(res, h.path, c.Home, h.goEnv, s.opts.protected(c.Home, runtime.GOOS))
	if h.gitConfig != os.DevNull {
		readOnly = append(readOnly, h.gitConfig)
	}
	return shellSetup{env: vars.list(), readOnly: readOnly, caches: caches}, nil
}

// personVars adds the variables the person configured: the server's values of the names
// in PassEnv, then Env's. Never jean2's own (JEAN2_*), a provider's key (the built-in
// names and the ones providers.json names, withheld) or a loader variable (LD_*), even
// named; jean2's own variables (shellOwnVars) are set after these.
func (s *shellSandbox) personVars(vars shellVars, environ, withheld []string) {
	allowed := func(name string) bool {
		return len(policy.WithheldEnv([]string{name})) == 0 && !slices.Contains(withheld, name) && !slices.Contains(shellOwnVars[:], name)
	}
	for _, name := range s.opts.PassEnv {
		if !allowed(name) {
			continue
		}
		for _, kv := range environ {
			if k, v, ok := strings.Cut(kv, "="); ok && k == name {
				vars.set(k, v)
			}
		}
	}
	for name, v := range s.opts.Env {
		if allowed(name) && !strings.ContainsRune(v, 0) {
			vars.set(name, v)
		}
	}
}

// toolchainVars point toolchains that find themselves through HOME (which is the
// session's folder) at the person's installation, unless the person set them; and put
// the person's own module cache before their Go proxy, so modules they downloaded
// already need no network (a file:// proxy serves them read-only).
func (s *shellSandbox) toolchainVars(vars shellVars, home string, g shellGoEnv) {
	if home != "" {
		for name, rel := range map[string]string{"RUSTUP_HOME": ".rustup", "PYENV_ROOT": ".pyenv", "PYTHONUSERBASE": ".local"} {
			if _, ok := vars.get(name); !ok && shellIsDir(filepath.Join(home, rel)) {
				vars.set(name, filepath.Join(home, rel))
			}
		}
	}
	if _, ok := vars.get("GOENV"); !ok && g.GOENV != "" && g.GOENV != "off" {
		if fi, err := os.Stat(g.GOENV); err == nil && fi.Mode().IsRegular() {
			vars.set("GOENV", g.GOENV)
		}
	}
	download := filepath.Join(g.GOMODCACHE, "cache", "download")
	if g.GOMODCACHE == "" || !shellIsDir(download) {
		return
	}
	tail, ok := vars.get("GOPROXY")
	if !ok {
		tail = g.GOPROXY
	}
	if tail == "" {
		tail = "https://proxy.golang.org,direct"
	}
	vars.set("GOPROXY", "file://"+filepath.ToSlash(download)+","+tail)
}

func shellIsDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// shellToolchains are the folders a command reads and runs its toolchains from: each
// folder of its PATH with the installation it belongs to (the parent of a bin folder:
// Node's lib/, a venv), Go's root, GOPATH and module cache, and the usual homes of
// toolchains in the person's home (~/.pyenv, ~/.cargo, ~/.rustup, ~/.nvm, ~/.local,
// ~/.bun). Never the home itself, "/", or anything inside a protected place (the plan
// carves protected places out of what is returned). Needed only while commands see the
// machine through Landlock's allow-list: once they see it read-only through a filesystem
// view, this function goes.
func shellToolchains(res *policy.Resolver, path, home string, g shellGoEnv, protected []string) []string {
	realHome := ""
	if home != "" {
		realHome = res.Real(home)
	}
	realProtected := make([]string, 0, len(protected))
	for _, x := range protected {
		realProtected = append(realProtected, res.Real(x))
	}
	var out []string
	add := func(p string) {
		if p == "" || !filepath.IsAbs(p) {
			return
		}
		real := res.Real(filepath.Clean(p))
		if real == "/" || (realHome != "" && policy.Within(realHome, real)) || slices.Contains(out, real) {
			return
		}
		for _, x := range realProtected {
			if policy.Within(real, x) {
				return
			}
		}
		if _, err := os.Stat(real); err == nil {
			out = append(out, real)
		}
	}
	for _, dir := range filepath.SplitList(path) {
		add(dir)
		if filepath.Base(dir) == "bin" {
			add(filepath.Dir(dir))
		}
	}
	add(g.GOROOT)
	for _, p := range filepath.SplitList(g.GOPATH) {
		add(p)
	}
	add(g.GOMODCACHE)
	add(g.GOENV)
	if home != "" {
		for _, rel := range []string{".pyenv", ".cargo", ".rustup", ".nvm", ".local", ".bun"} {
			add(filepath.Join(home, rel))
		}
	}
	return out
}

// shellCaches makes the cache folders of a workspace, $cache/shell/<key>/<dir> for each of
// shellCacheVars, and returns them in that order. They are made from jean2's cache folder
// on, no component followed if it is a link: commands may write inside the folders, never
// the folders that hold them (a command cannot swap one for a link).
func shellCaches(res *policy.Resolver, cache, workspace string) ([]string, error) {
	key := shellWorkspaceKey(res, workspace)
	if out, ok := shellCachesMade(res, cache, key); ok {
		return out, nil
	}
	var out []string
	for _, v := range shellCacheVars {
		dir, err := shellMakeDirs(cache, "shell", key, v.dir)
		if err != nil {
			return nil, err
		}
		out = append(out, dir)
	}
	return out, nil
}

// shellCachesMade returns the workspace's cache folders when every one already is a folder
// and nothing from jean2's cache folder down to it is a link (what shellMakeDirs would
// find, for the price of one look at each folder: every command of a workspace asks).
func shellCachesMade(res *policy.Resolver, cache, key string) ([]string, bool) {
	realCache := res.Real(cache)
	out := make([]string, 0, len(shellCacheVars))
	for _, v := range shellCacheVars {
		dir := filepath.Join(cache, "shell", key, v.dir)
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() || res.Real(dir) != filepath.Join(realCache, "shell", key, v.dir) {
			return nil, false
		}
		out = append(out, dir)
	}
	return out, true
}

// shellWorkspaceKey names a workspace's caches: its folder's name (for a person looking)
// and a hash of its real path (two folders of the same name differ).
func shellWorkspaceKey(res *policy.Resolver, workspace string) string {
	real := res.Real(filepath.Clean(workspace))
	sum := sha256.Sum256([]byte(real))
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, filepath.Base(real))
	if len(name) > 40 {
		name = name[:40]
	}
	return name + "-" + hex.EncodeToString(sum[:8])
}

// shellMakeDirs makes the folders root/names[0]/names[1]/… (0700) one at a time, each
// refused if it is anything but a folder (a link included), and returns the last.
func shellMakeDirs(root string, names ...string) (string, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", fmt.Errorf("shell: make the cache folder %s: %w", root, err)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return "", fmt.Errorf("shell: open the cache folder %s: %w", root, err)
	}
	defer r.Close()
	rel := ""
	for _, n := range names {
		rel = filepath.Join(rel, n)
		if err := r.Mkdir(rel, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("shell: make the cache folder %s: %w", filepath.Join(root, rel), err)
		}
		fi, err := r.Lstat(rel)
		if err != nil {
			return "", fmt.Errorf("shell: cache folder %s: %w", filepath.Join(root, rel), err)
		}
		if !fi.IsDir() {
			return "", fmt.Errorf("shell: cache folder %s is not a folder (%s)", filepath.Join(root, rel), fi.Mode().Type())
		}
	}
	return filepath.Join(root, rel), nil
}

// shellVars is an environment being built: a later set of a name replaces the earlier.
type shellVars map[string]string

func (v shellVars) set(name, value string) { v[name] = value }
func (v shellVars) unset(name string)      { delete(v, name) }
func (v shellVars) get(name string) (string, bool) {
	value, ok := v[name]
	return value, ok
}

// list is the environment as exec.Cmd takes it, sorted (a stable order for tests and logs).
func (v shellVars) list() []string {
	out := make([]string, 0, len(v))
	for k, value := range v {
		out = append(out, k+"="+value)
	}
	slices.Sort(out)
	return out
}

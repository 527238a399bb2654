package loader

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/jean2/jean2/internal/fsutil"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jean2/jean2/sdkjs"
)

// stampName is the file inside node_modules that records which dependency set it holds.
const stampName = ".jean2-deps"

// Installers, as recorded in the stamp.
const (
	installerNPM = "npm"
	installerBun = "bun"
)

// lockfiles are copied into the scratch directory so an install reproduces them.
var lockfiles = map[string][]string{
	installerNPM: {"package-lock.json", "npm-shrinkwrap.json"},
	installerBun: {"bun.lock", "bun.lockb"},
}

// depSet is a tool's dependencies without the packages the host provides.
type depSet struct {
	installer string
	deps      map[string]string
	optional  map[string]string
	overrides json.RawMessage
	// scripts: the dependencies' install scripts run (declared and approved); otherwise the
	// installer gets --ignore-scripts.
	scripts bool
}

func (d depSet) empty() bool { return len(d.deps) == 0 && len(d.optional) == 0 }

func (d depSet) count() int { return len(d.deps) + len(d.optional) }

func (d depSet) names() []string {
	names := make([]string, 0, d.count())
	for n := range d.deps {
		names = append(names, n)
	}
	for n := range d.optional {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// filterDeps drops @jean2/sdk and @jxsuite/* (the host provides them) and turns relative
// local specs ("file:../lib", "./lib") into absolute ones, since the install runs elsewhere.
func filterDeps(dir string, pkg *Package, installer string) depSet {
	d := depSet{installer: installer}
	if pkg == nil {
		return d
	}
	keep := func(in map[string]string) map[string]string {
		out := map[string]string{}
		for name, spec := range in {
			if sdkjs.IsHostPackage(name) {
				continue
			}
			out[name] = absoluteLocalSpec(dir, spec)
		}
		return out
	}
	d.deps = keep(pkg.Dependencies)
	d.optional = keep(pkg.OptionalDependencies)
	d.overrides = pkg.Overrides
	return d
}

func absoluteLocalSpec(dir, spec string) string {
	for _, prefix := range []string{"file:", "link:", ""} {
		rest, ok := strings.CutPrefix(spec, prefix)
		if !ok {
			continue
		}
		if strings.HasPrefix(rest, "./") || strings.HasPrefix(rest, "../") || rest == "." || rest == ".." {
			if prefix == "" {
				prefix = "file:"
			}
			return prefix + filepath.Join(dir, rest)
		}
	}
	return spec
}

// localPaths are the folders and archives the local specs name (file:/abs, link:/abs).
func (d depSet) localPaths() []string {
	var out []string
	for _, m := range []map[string]string{d.deps, d.optional} {
		for _, spec := range m {
			for _, prefix := range []string{"file:", "link:"} {
				if rest, ok := strings.CutPrefix(spec, prefix); ok && filepath.IsAbs(rest) {
					out = append(out, filepath.Clean(rest))
				}
			}
		}
	}
	return out
}

// stamp identifies the dependency set: installer, filtered dependencies, overrides and the
// lockfile. node_modules is reinstalled whenever it changes.
func (d depSet) stamp(dir string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "jean2-deps/1\ninstaller=%s\n", d.installer)
	if d.scripts {
		fmt.Fprintf(h, "scripts=run\n")
	}
	for _, group := range []struct {
		name string
		m    map[string]string
	}{{"dependencies", d.deps}, {"optionalDependencies", d.optional}} {
		names := make([]string, 0, len(group.m))
		for n := range group.m {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(h, "%s=%d\n", group.name, len(names))
		for _, n := range names {
			fmt.Fprintf(h, "%q %q\n", n, group.m[n])
		}
	}
	fmt.Fprintf(h, "overrides=%d:%s\n", len(d.overrides), d.overrides)
	for _, lock := range lockfiles[d.installer] {
		f, err := os.Open(filepath.Join(dir, lock))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "lock %s\n", lock)
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func readStamp(dir string) string {
	data, err := fsutil.ReadLimited(filepath.Join(dir, "node_modules", stampName), 256)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// installedPackageJSON is the package.json the installer sees: the tool's dependencies
// without the host's packages, and without the tool's scripts, which never run on the host.
func (d depSet) packageJSON(pkg *Package) ([]byte, error) {
	m := map[string]any{"name": "jean2-tool-deps", "version": "0.0.0", "private": true}
	if pkg != nil && pkg.Type != "" {
		m["type"] = pkg.Type
	}
	if len(d.deps) > 0 {
		m["dependencies"] = d.deps
	}
	if len(d.optional) > 0 {
		m["optionalDependencies"] = d.optional
	}
	if len(d.overrides) > 0 {
		m["overrides"] = d.overrides
	}
	if d.scripts && d.installer == installerBun {
		// bun runs the scripts of the packages it trusts only.
		m["trustedDependencies"] = d.names()
	}
	return json.MarshalIndent(m, "", "  ")
}

// ensureDeps installs the folder's dependencies unless node_modules already holds this
// set. It returns the stamp, which goes into the bundle hash.
func (l *Loader) ensureDeps(ctx context.Context, f Folder, d depSet, progress func(stage, msg string)) (string, error) {
	stamp, err := d.stamp(f.Dir)
	if err != nil {
		return "", &Error{Folder: f.Name, Stage: StageInstall, Msg: "read lockfile: " + err.Error(), Err: err}
	}
	if readStamp(f.Dir) == stamp {
		return stamp, nil
	}
	noun := "dependencies"
	if d.count() == 1 {
		noun = "dependency"
	}
	progress(StageInstall, fmt.Sprintf("installing %d %s (%s) with %s", d.count(), noun, strings.Join(d.names(), ", "), d.installer))
	start := time.Now()
	if err := l.install(ctx, f, d, stamp); err != nil {
		return "", err
	}
	l.logger.Info("installed tool dependencies", "tool", f.Name, "installer", d.installer, "packages", d.names(), "took", time.Since(start).Round(time.Millisecond))
	return stamp, nil
}

// install runs the installer in a scratch directory beside the tool folder (hidden, so it
// is never taken for a tool, and on the same file system, so the result can be renamed
// into place) and then swaps the new node_modules in for the old one.
func (l *Loader) install(ctx context.Context, f Folder, d depSet, stamp string) error {
	scratch, err := os.MkdirTemp(filepath.Dir(f.Dir), "."+f.Name+".install-")
	if err != nil {
		return installErrorf(f, err, "make scratch directory: %v", err)
	}
	defer os.RemoveAll(scratch)
	if err := writeInstallManifest(f, d, scratch); err != nil {
		return err
	}

	// The installer's own home, temporary folder and npm configuration, which no other
	// install and nothing of the host's sees (see privateInstallDir).
	private, err := l.privateInstallDir(d)
	if err != nil {
		return installErrorf(f, err, "make the installer's folder: %v", err)
	}
	defer os.RemoveAll(private)
	if err := l.runInstall(ctx, f, d, scratch, private); err != nil {
		return err
	}
	return placeModules(f, scratch, stamp)
}

// installErrorf is an install-stage error of folder f.
func installErrorf(f Folder, err error, format string, args ...any) error {
	return &Error{Folder: f.Name, Stage: StageInstall, Msg: fmt.Sprintf(format, args...), Err: err}
}

// writeInstallManifest puts in scratch the package.json the installer reads (the folder's
// dependencies that it installs) and the folder's lockfiles.
func writeInstallManifest(f Folder, d depSet, scratch string) error {
	manifest, err := d.packageJSON(f.Package)
	if err != nil {
		return installErrorf(f, err, "write package.json: %v", err)
	}
	if err := os.WriteFile(filepath.Join(scratch, "package.json"), manifest, 0o644); err != nil {
		return installErrorf(f, err, "write package.json: %v", err)
	}
	for _, lock := range lockfiles[d.installer] {
		if err := copyFile(filepath.Join(f.Dir, lock), filepath.Join(scratch, lock)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return installErrorf(f, err, "copy %s: %v", lock, err)
		}
	}
	return nil
}

// runInstall runs the installer in scratch, confined when the loader confines installs, and
// says why it failed: out of time, stopped, or what it printed.
func (l *Loader) runInstall(ctx context.Context, f Folder, d depSet, scratch, private string) error {
	cmd, err := l.installCommand(ctx, d, scratch, private)
	if err != nil {
		return installErrorf(f, err, "%v", err)
	}
	release := func() {}
	if confine := l.opts.ConfineInstall; confine != nil {
		writable := []string{scratch, private, filepath.Join(l.opts.CacheDir, "npm-cache"), filepath.Join(l.opts.CacheDir, "bun-cache")}
		rel, err := confine(cmd, append([]string{f.Dir}, d.localPaths()...), writable)
		if err != nil {
			return installErrorf(f, err, "confine the installer: %v", err)
		}
		if rel != nil {
			release = rel
		}
	}
	stdout, stderr, err := runInstaller(cmd, release)
	if err == nil {
		return nil
	}
	if errors.Is(context.Cause(ctx), errInstallTimeout) {
		return installErrorf(f, ctx.Err(), "%s install did not finish within %v (the install time limit) and was stopped", d.installer, l.opts.InstallTimeout)
	}
	if ctx.Err() != nil {
		return installErrorf(f, ctx.Err(), "%s install stopped: %v", d.installer, context.Cause(ctx))
	}
	msg := installerMessage(stderr)
	if msg == "" {
		msg = installerMessage(stdout)
	}
	if msg == "" {
		msg = "(it printed nothing)"
	}
	return installErrorf(f, err, "%s install failed (%v): %s", d.installer, err, msg)
}

// placeModules moves the installed node_modules from scratch into the tool folder, with the
// SDK's types and the dependency stamp.
//
// The install scripts could write the scratch folder, and one may still run: they may have
// left links under the names the host writes next (the stamp, the SDK's folders) to make it
// write outside. node_modules is first moved out of their reach (Landlock grants follow the
// folder, not the name), then those names are cleared without following links, then
// written.
func placeModules(f Folder, scratch, stamp string) error {
	ready, err := os.MkdirTemp(filepath.Dir(f.Dir), "."+f.Name+".deps-")
	if err != nil {
		return installErrorf(f, err, "make scratch directory: %v", err)
	}
	defer fsutil.RemoveTree(ready)
	modules := filepath.Join(ready, "node_modules")
	if err := os.Rename(filepath.Join(scratch, "node_modules"), modules); errors.Is(err, fs.ErrNotExist) {
		err = os.Mkdir(modules, 0o755)
		if err != nil {
			return installErrorf(f, err, "%v", err)
		}
	} else if err != nil {
		return installErrorf(f, err, "take node_modules from the installer: %v", err)
	}
	if err := clearHostNames(modules); err != nil {
		return installErrorf(f, err, "%v", err)
	}
	// Editors resolve the SDK imports from node_modules; the bundler never looks there.
	if err := sdkjs.WriteTypes(ready); err != nil {
		return installErrorf(f, err, "%v", err)
	}
	if err := fsutil.ReplaceIn(modules, ".", stampName, []byte(stamp+"\n"), 0o644); err != nil {
		return installErrorf(f, err, "write dependency stamp: %v", err)
	}
	if err := replaceDir(modules, filepath.Join(f.Dir, "node_modules")); err != nil {
		return installErrorf(f, err, "move node_modules into place: %v", err)
	}
	return nil
}

// privateInstallDir makes the installer's own folder: home/ (its HOME, so that it reads no
// configuration of the user's), tmp/ (its TMPDIR) and npmrc (its user configuration, see
// installNPMRC). It lies in the cache, readable by this user only, and goes with the install.
func (l *Loader) privateInstallDir(d depSet) (string, error) {
	base := filepath.Join(l.opts.CacheDir, "install-private")
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(base, "i-")
	if err != nil {
		return "", err
	}
	for _, sub := range []string{"home", "tmp"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o700); err != nil {
			os.RemoveAll(dir)
			return "", err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "npmrc"), installNPMRC(l.home, !d.scripts, os.Getenv), 0o600); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// runInstaller runs the installer and returns the tails of its output. Once it has exited,
// nothing it started outlives it: release (called on every path) ends what the confinement holds (a daemon that
// left the process group for a session of its own is still in the install's cgroup), then
// the rest of its process group is killed. Its output goes through pipes of our own, so a
// leftover that still holds them cannot keep the install waiting.
func runInstaller(cmd *exec.Cmd, release func()) (stdout, stderr string, err error) {
	var outBuf, errBuf tailBuffer
	outR, outW, err := os.Pipe()
	if err != nil {
		release()
		return "", "", err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		release()
		return "", "", err
	}
	defer outR.Close()
	defer errR.Close()
	cmd.Stdout, cmd.Stderr = outW, errW
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		release()
		return "", "", err
	}
	var wg sync.WaitGroup
	for _, c := range []struct {
		dst *tailBuffer
		src *os.File
	}{{&outBuf, outR}, {&errBuf, errR}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = io.Copy(c.dst, c.src)
		}()
	}
	err = cmd.Wait()
	release()
	endProcessGroup(cmd)
	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(2 * time.Second):
		// Something outside the group and the cgroup (no confinement) holds the pipes.
		outR.Close()
		errR.Close()
		<-drained
	}
	return outBuf.String(), errBuf.String(), err
}

// clearHostNames removes what the installer left in node_modules under the names the host
// writes (the SDK's packages, the stamp), never following a link: a link is removed, not
// what it points to. modules itself must be a real folder the installer can no longer
// write.
func clearHostNames(modules string) error {
	fi, err := os.Lstat(modules)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("the installer left node_modules as %s, not a folder", fi.Mode().Type())
	}
	for _, scope := range []string{"@jean2", "@jxsuite"} {
		p := filepath.Join(modules, scope)
		if fi, err := os.Lstat(p); err == nil && !fi.IsDir() {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	for _, rel := range []string{"@jean2/sdk", "@jxsuite/ai", stampName} {
		if err := fsutil.RemoveTree(filepath.Join(modules, rel)); err != nil {
			return err
		}
	}
	return nil
}

// installCommand builds the installer's command with an explicit, minimal environment:
// what finds the binaries and the registry, nothing of the host's (no provider keys).
// private is the installer's own folder (privateInstallDir).
func (l *Loader) installCommand(ctx context.Context, d depSet, dir, private string) (*exec.Cmd, error) {
	installer := d.installer
	var bin string
	var args []string
	env := []string{
		"HOME=" + filepath.Join(private, "home"), "TMPDIR=" + filepath.Join(private, "tmp"),
		"NPM_CONFIG_USERCONFIG=" + filepath.Join(private, "npmrc"),
		"npm_config_update_notifier=false", "npm_config_fund=false", "npm_config_audit=false",
	}
	switch installer {
	case installerBun:
		bin = l.opts.Runtimes.Bun
		if bin == "" {
			// No JEAN2_BUN: the bun on PATH, as the worker's runtime and jean2 doctor find it.
			found, err := exec.LookPath("bun")
			if err != nil {
				return nil, fmt.Errorf("the tool runs on bun, and no bun was found (set JEAN2_BUN or put bun on PATH): %w", err)
			}
			bin = found
		}
		args = []string{"install", "--production", "--no-progress", "--no-summary", "--no-save"}
		if !d.scripts {
			args = append(args, "--ignore-scripts")
		}
		env = append(env, "BUN_INSTALL_CACHE_DIR="+filepath.Join(l.opts.CacheDir, "bun-cache"))
	default:
		bin = l.opts.Runtimes.NPM
		if bin == "" {
			found, err := exec.LookPath("npm")
			if err != nil {
				return nil, fmt.Errorf("npm is needed to install the tool's dependencies and was not found: %w", err)
			}
			bin = found
		}
		args = []string{"install", "--no-audit", "--no-fund", "--omit=dev", "--no-progress", "--loglevel=error"}
		if !d.scripts {
			args = append(args, "--ignore-scripts")
		}
		env = append(env, "npm_config_cache="+filepath.Join(l.opts.CacheDir, "npm-cache"))
	}
	env = append(env, "PATH="+l.installPath(bin))
	for _, name := range passThroughEnv {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	env = append(env, l.opts.InstallEnv...)

	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = env
	ownProcessGroup(cmd)
	cmd.WaitDelay = 5 * time.Second
	return cmd, nil
}

// passThroughEnv is how the machine reaches a registry: proxies and extra CA certificates.
// They describe the network, not the host's secrets.
var passThroughEnv = [...]string{
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
	"NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR",
}

// installPath puts the directories of the configured node and of the installer first
// (npm is a node script), then the system directories.
func (l *Loader) installPath(installer string) string {
	var dirs []string
	seen := map[string]bool{}
	add := func(d string) {
		if d != "" && d != "." && !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	if l.opts.Runtimes.Node != "" {
		add(filepath.Dir(l.opts.Runtimes.Node))
	}
	add(filepath.Dir(installer))
	if node, err := exec.LookPath("node"); err == nil && l.opts.Runtimes.Node == "" {
		add(filepath.Dir(node))
	}
	for _, d := range []string{"/usr/local/bin", "/usr/bin", "/bin"} {
		add(d)
	}
	return strings.Join(dirs, string(os.PathListSeparator))
}

// installerMessage keeps the useful tail of an installer's output: its error lines, without
// the pointer to its own log file.
func installerMessage(out string) string {
	var keep []string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimRight(line, "\r ")
		if line == "" || strings.Contains(line, "A complete log of this run can be found in") || strings.HasSuffix(line, "debug-0.log") {
			continue
		}
		keep = append(keep, line)
	}
	const maxLines = 15
	if len(keep) > maxLines {
		keep = keep[len(keep)-maxLines:]
	}
	msg := strings.Join(keep, "\n")
	const maxChars = 2000
	if len(msg) > maxChars {
		msg = "…" + msg[len(msg)-maxChars:]
	}
	return msg
}

// tailBuffer keeps the last 64 KiB written to it.
type tailBuffer struct{ buf bytes.Buffer }

const tailLimit = 64 << 10

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) > tailLimit {
		p = p[len(p)-tailLimit:]
	}
	if t.buf.Len()+len(p) > tailLimit {
		keep := t.buf.Bytes()[t.buf.Len()+len(p)-tailLimit:]
		rest := append([]byte(nil), keep...)
		t.buf.Reset()
		t.buf.Write(rest)
	}
	t.buf.Write(p)
	return n, nil
}

func (t *tailBuffer) String() string { return t.buf.String() }

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

package loader

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/jean2/jean2/internal/fsutil"
	"github.com/jean2/jean2/sdkjs"
)

// Runtimes are the binaries the loader runs to install dependencies.
type Runtimes struct {
	// Node is the node binary; its directory goes first on the installer's PATH (npm is a
	// node script). Empty: the node found on PATH.
	Node string
	// NPM installs the dependencies of node tools. Empty: the npm found on PATH.
	NPM string
	// Bun installs the dependencies of tools whose runtime is bun.
	Bun string
}

// Options configure a Loader.
type Options struct {
	// CacheDir holds bundles (bundles/<hash>.mjs), definitions (bundles/<hash>.json) and
	// the installers' caches. Required.
	CacheDir string
	Runtimes Runtimes
	Logger   *slog.Logger // nil: discard
	// InstallTimeout bounds one dependency install; 0 means DefaultInstallTimeout.
	InstallTimeout time.Duration
	// InstallEnv adds KEY=VALUE entries to the installer's otherwise minimal environment
	// (for example npm_config_registry for a mirror).
	InstallEnv []string
	// ConfineInstall, when set, may rewrite the installer's command before it runs so that
	// it (and the packages' install scripts) can read only the given places beside the
	// system (the tool's folder, its local dependencies, which lie in it) and write only the
	// given folders, under limits: the host starts it through the sandbox launcher. The
	// function it returns, when not nil, is called once the installer has exited, to end
	// whatever it left running.
	ConfineInstall func(cmd *exec.Cmd, readable, writable []string) (release func(), err error)
	// InstallScripts says whether a person approved that the install scripts of the
	// dependency set key run for a folder that declares "jean2": {"installScripts": true}.
	// nil: never. Without approval every install passes --ignore-scripts.
	InstallScripts func(folder Folder, key string) bool
	// Confidential, when set, names files no bundle may contain: a tool that imports one
	// (a JSON or text file of jean2's home, a credential) fails to bundle instead of
	// carrying the file's content in its code. It gets real paths.
	Confidential func(path string) bool
}

// LoadOptions configure one Load.
type LoadOptions struct {
	// Runtime the tool will run on: RuntimeNode or RuntimeBun. It picks the installer (npm
	// or bun). Empty: the folder's preference, else node.
	Runtime string
	// Progress hears about long stages: StageInstall and StageBundle. May be nil.
	Progress func(stage, msg string)
}

// Bundle is a loaded tool folder: for a JS tool, the bundled module a worker imports.
type Bundle struct {
	Folder            string // absolute folder path
	Name              string // folder name
	Entry             string // entry file relative to Folder
	Kind              string // KindJS or KindGo
	Hash              string // content hash of the folder and everything the bundle depends on
	Version           string
	RuntimePreference string
	Path              string // the bundle file (bundles/<Hash>.mjs); "" for Go folders
	Cached            bool   // the bundle came from the cache; esbuild did not run
	// InstallScripts is set when the folder declares that its dependencies' install scripts
	// must run: whether they were approved (and ran), and the key an approval names.
	InstallScripts *InstallScripts
}

// DefaultInstallTimeout bounds a dependency install when Options.InstallTimeout is 0.
const DefaultInstallTimeout = 5 * time.Minute

// Loader installs, bundles and caches tool folders. It is safe for concurrent use; loads of
// one folder are serialized, loads of different folders run in parallel.
type Loader struct {
	opts    Options
	logger  *slog.Logger
	home    string
	esbuild string
	build   buildFunc

	mu    sync.Mutex
	locks map[string]*folderLock
}

type folderLock struct {
	mu    sync.Mutex
	users int
}

// New makes a Loader. opts is copied.
func New(opts Options) *Loader {
	if opts.InstallTimeout <= 0 {
		opts.InstallTimeout = DefaultInstallTimeout
	}
	opts.InstallEnv = append([]string(nil), opts.InstallEnv...)
	if abs, err := filepath.Abs(opts.CacheDir); err == nil && opts.CacheDir != "" {
		opts.CacheDir = abs
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return &Loader{
		opts:    opts,
		logger:  logger,
		home:    home,
		esbuild: esbuildVersion(),
		build:   esbuildBundle,
		locks:   map[string]*folderLock{},
	}
}

// lock serializes loads of one folder: two installs into one node_modules would collide.
func (l *Loader) lock(dir string) func() {
	l.mu.Lock()
	fl := l.locks[dir]
	if fl == nil {
		fl = &folderLock{}
		l.locks[dir] = fl
	}
	fl.users++
	l.mu.Unlock()
	fl.mu.Lock()
	return func() {
		fl.mu.Unlock()
		l.mu.Lock()
		fl.users--
		if fl.users == 0 {
			delete(l.locks, dir)
		}
		l.mu.Unlock()
	}
}

// Load makes the folder ready to run: it installs dependencies when the dependency set
// changed, then returns the cached bundle for the folder's content hash or bundles it.
// The folder is read again from disk (folder only says where it is), so a change since
// Discover is seen. Errors are *Error. A Go folder gets its hash only; the host builds it.
func (l *Loader) Load(ctx context.Context, folder Folder, opts LoadOptions) (*Bundle, error) {
	unlock := l.lock(folder.Dir)
	defer unlock()
	// Another jean2 process (a server beside a `tools run`) may load the same folder now:
	// one installs and bundles while the other waits, then finds the bundle cached.
	if l.opts.CacheDir != "" && filepath.IsAbs(folder.Dir) {
		unlockFile, err := l.lockFolderFile(ctx, folder.Dir)
		if err != nil {
			return nil, &Error{Folder: folder.Name, Stage: StageCache, Msg: "lock the folder against other jean2 processes: " + err.Error(), Err: err}
		}
		defer unlockFile()
	}
	return l.load(ctx, folder, opts, 1)
}

// lockFolderFile takes the cross-process lock of one folder: a file under the cache's locks
// folder named by a digest of the folder's path.
func (l *Loader) lockFolderFile(ctx context.Context, dir string) (func(), error) {
	locks := filepath.Join(l.opts.CacheDir, "locks")
	if err := os.MkdirAll(locks, 0o700); err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(dir))
	return fsutil.LockFile(ctx, filepath.Join(locks, hex.EncodeToString(sum[:16])+".lock"), nil)
}

// maxBundleAttempts bounds how often a load starts over because the folder changed while
// it was being bundled.
const maxBundleAttempts = 5

// load loads the folder: its dependencies installed, its content hashed, and (a JavaScript
// tool) its bundle, from the cache or made now. attempt counts the starts over when the
// folder changed while it was bundled.
func (l *Loader) load(ctx context.Context, folder Folder, opts LoadOptions, attempt int) (*Bundle, error) {
	if l.opts.CacheDir == "" {
		return nil, &Error{Folder: folder.Name, Stage: StageCache, Msg: "the loader has no cache directory (Options.CacheDir)"}
	}
	if folder.Dir == "" || !filepath.IsAbs(folder.Dir) {
		return nil, &Error{Folder: folder.Name, Stage: StageDiscover, Msg: fmt.Sprintf("folder path %q is not absolute: pass a Folder from Discover or Inspect", folder.Dir)}
	}
	progress := opts.Progress
	if progress == nil {
		progress = func(string, string) {}
	}

	f := Inspect(folder.Dir)
	if f.Err != nil {
		return nil, f.Err
	}
	b := &Bundle{Folder: f.Dir, Name: f.Name, Entry: f.Entry, Kind: f.Kind, Version: f.Version, RuntimePreference: f.RuntimePreference}
	if err := ctx.Err(); err != nil {
		return nil, &Error{Folder: f.Name, Stage: StageDiscover, Msg: "load stopped: " + context.Cause(ctx).Error(), Err: err}
	}

	stamp := ""
	if f.Kind == KindJS {
		s, err := l.installDeps(ctx, f, b, opts.Runtime, progress)
		if err != nil {
			return nil, err
		}
		stamp = s
	}

	in := hashInputs{dir: f.Dir, entry: f.Entry, depsStamp: stamp, sdk: sdkjs.Hash(), esbuild: l.esbuild}
	if f.Kind == KindGo {
		// Neither the SDK nor esbuild touch a Go tool; a new binary need not rebuild it.
		in.sdk, in.esbuild = "", ""
	}
	hash, err := hashFolder(in)
	if err != nil {
		return nil, &Error{Folder: f.Name, Stage: StageCache, Msg: "hash folder: " + err.Error(), Err: err}
	}
	b.Hash = hash
	if f.Kind == KindGo {
		return b, nil
	}

	b.Path = l.BundlePath(hash)
	if st, err := os.Stat(b.Path); err == nil && st.Mode().IsRegular() && st.Size() > 0 {
		b.Cached = true
		return b, nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, &Error{Folder: f.Name, Stage: StageCache, Msg: err.Error(), Err: err}
	}
	return l.bundle(ctx, folder, f, b, in, opts, attempt, progress)
}

// installDeps installs a JavaScript folder's dependencies with the installer of the runtime
// it runs on (runtime, else the folder's preference) and returns the stamp of what is
// installed ("" when it has none). b learns whether install scripts run.
func (l *Loader) installDeps(ctx context.Context, f Folder, b *Bundle, runtime string, progress func(stage, msg string)) (string, error) {
	if runtime == "" {
		runtime = f.RuntimePreference
	}
	installer := installerNPM
	switch runtime {
	case "", RuntimeNode:
	case RuntimeBun:
		installer = installerBun
	default:
		return "", &Error{Folder: f.Name, Stage: StageInstall, Msg: fmt.Sprintf("runtime %q is unknown: use node or bun", runtime)}
	}
	deps := filterDeps(f.Dir, f.Package, installer)
	if deps.empty() {
		return "", nil
	}
	if err := checkLocalDeps(f, installer); err != nil {
		return "", &Error{Folder: f.Name, Stage: StageInstall, File: "package.json", Msg: err.Error(), Err: err}
	}
	if f.Package.InstallScripts {
		key, err := installScriptsKey(f, installer)
		if err != nil {
			return "", &Error{Folder: f.Name, Stage: StageInstall, Msg: err.Error(), Err: err}
		}
		b.InstallScripts = &InstallScripts{Key: key, Dependencies: deps.names()}
		b.InstallScripts.Approved = l.opts.InstallScripts != nil && l.opts.InstallScripts(f, key)
		deps.scripts = b.InstallScripts.Approved
	}
	ictx, cancel := context.WithTimeoutCause(ctx, l.opts.InstallTimeout, errInstallTimeout)
	defer cancel()
	return l.ensureDeps(ictx, f, deps, progress)
}

// bundle makes b's bundle with esbuild and stores it in the cache under the hash of in,
// starting the load over when the folder changed meanwhile.
func (l *Loader) bundle(ctx context.Context, folder, f Folder, b *Bundle, in hashInputs, opts LoadOptions, attempt int, progress func(stage, msg string)) (*Bundle, error) {
	progress(StageBundle, "bundling "+f.Entry)
	start := time.Now()
	res := l.build(buildRequest{folder: f, outfile: b.Path, confidential: l.opts.Confidential})
	// esbuild reads the files again: if the folder changed between hashing and bundling (an
	// editor mid-save), the bundle is of other content than the hash names, and caching it
	// would serve that code whenever the hashed content comes back (an empty file, say).
	// Only a bundle whose folder held still is stored; otherwise start over.
	if after, err := hashFolder(in); err != nil || after != b.Hash {
		if attempt >= maxBundleAttempts {
			return nil, &Error{Folder: f.Name, Stage: StageBundle, Msg: fmt.Sprintf("the folder kept changing while it was bundled (%d tries); load it again once the writes settle", attempt)}
		}
		return l.load(ctx, folder, opts, attempt+1)
	}
	for _, w := range res.warnings {
		attrs := []any{"tool", f.Name, "warning", w.Text}
		if w.Location != nil {
			attrs = append(attrs, "file", locationFile(f.Dir, w.Location.File), "line", w.Location.Line)
		}
		l.logger.Debug("esbuild warning", attrs...)
	}
	if len(res.errors) > 0 {
		return nil, bundleError(f, res.errors)
	}
	if err := os.MkdirAll(filepath.Dir(b.Path), 0o755); err != nil {
		return nil, &Error{Folder: f.Name, Stage: StageCache, Msg: err.Error(), Err: err}
	}
	if err := publishBundle(b.Path, res.code); err != nil {
		return nil, &Error{Folder: f.Name, Stage: StageCache, Msg: "write bundle: " + err.Error(), Err: err}
	}
	l.logger.Debug("bundled tool", "tool", f.Name, "entry", f.Entry, "bytes", len(res.code), "took", time.Since(start).Round(time.Millisecond))
	return b, nil
}

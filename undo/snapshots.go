package undo

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	unix "github.com/jean2/jean2/internal/xunix"
	"github.com/jean2/jean2/policy"
)

// Defaults of Options.
const (
	DefaultMaxEntries   = 200_000   // paths recorded per root; a larger root is not tracked
	DefaultMaxFileSize  = 32 << 20  // larger files are recorded by their stat only and cannot be restored
	DefaultMaxNewBytes  = 512 << 20 // bytes read into the store by one walk; the rest waits for the next
	DefaultMaxTreeBytes = 64 << 20  // undo data of one directory tree put in a ledger (as toolfs's snapshots)
	DefaultPruneEvery   = 20        // turns filed or discarded between two automatic prunes
)

// DefaultSkip returns the names a snapshot skips at any depth by default: version-control
// data and installed dependencies, large and rebuilt by their own tools; and jean2's own
// workspace settings folder (policy.SettingsDir), which the host makes in each workspace
// root so it can be sealed and which no tool may change, so a turn never changed it.
func DefaultSkip() []string { return []string{".git", "node_modules", policy.SettingsDir} }

// racyWindow is how recent a file's last change may be, against the start of the walk that
// read it, before its stat key is no longer trusted on the next walk: file times tick in
// steps (a jiffy on Linux, up to 2 s on some file systems), so two writes within one step
// can leave the same key behind.
const racyWindow = 2 * time.Second

// Options configure Snapshots. New copies them; zero fields take the defaults.
type Options struct {
	// Dir holds the store: blobs/ (contents by hash), manifests/ (snapshots of roots),
	// roots/ (the latest snapshot of each root), turns/ (turns begun and not yet filed).
	// Required; the server uses $JEAN2_HOME/undo. One process owns it at a time.
	Dir string
	// Skip lists names not recorded at any depth (DefaultSkip when nil; an empty non-nil
	// slice skips nothing). What lies below them is neither seen nor restored.
	Skip []string
	// MaxEntries caps the paths recorded under one root (DefaultMaxEntries); past it the
	// root is not tracked for the turn and the turn's Warnings say so.
	MaxEntries int
	// MaxFileSize caps the size of a file whose content is kept (DefaultMaxFileSize).
	MaxFileSize int64
	// MaxNewBytes caps the bytes one walk reads into the store (DefaultMaxNewBytes); files
	// past it are recorded without content this time and read by the next walk.
	MaxNewBytes int64
	// MaxTreeBytes caps the undo data of one directory tree put in a ledger, when a
	// directory is removed or changes kind or mode (DefaultMaxTreeBytes).
	MaxTreeBytes int64
	// PruneEvery runs Prune after this many turns were filed or discarded
	// (DefaultPruneEvery); negative never prunes by itself.
	PruneEvery int
	Logger     *slog.Logger
}

// Snapshots snapshots workspace folders at turn start, turns what changed by the end of a
// turn into ledger changes, and restores. Safe for concurrent use; Close it when done.
type Snapshots struct {
	opts    Options
	dir     string
	realDir string // dir with symlinks resolved, as roots are
	log     *slog.Logger
	blobs   blobStore
	skip    map[string]bool
	lock    *os.File // holds the flock that makes this process the store's only user

	// gc is held shared by everything that writes blobs or manifests or reads them for a
	// turn, and exclusively by Prune, so Prune never removes what a walk just wrote.
	gc sync.RWMutex

	mu         sync.Mutex
	rootLocks  map[string]*sync.Mutex // one walk of a root at a time
	latest     map[string]*manifest   // the latest manifest of each root, once loaded
	live       map[string]bool        // ids of turns begun here and not yet filed or discarded
	restores   map[string]bool        // sessions with a restore running in this process
	sincePrune int
	closed     bool

	// Test seams: onRead sees every file whose content a walk reads; racy overrides
	// racyWindow.
	onRead func(path string)
	racy   time.Duration
	// afterApply runs once a restore has put its files back, before its ledgers are
	// marked restored: where a crash test kills the process.
	afterApply func()
}

// New opens (creating if needed) the store in opts.Dir. It fails if another process has it
// open.
func New(opts Options) (*Snapshots, error) {
	if opts.Dir == "" {
		return nil, errors.New("undo: Options.Dir is required")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("undo: store folder %s: %w", opts.Dir, err)
	}
	if opts.Skip == nil {
		opts.Skip = DefaultSkip()
	}
	opts.Skip = slices.Clone(opts.Skip)
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = DefaultMaxEntries
	}
	if opts.MaxFileSize <= 0 {
		opts.MaxFileSize = DefaultMaxFileSize
	}
	if opts.MaxNewBytes <= 0 {
		opts.MaxNewBytes = DefaultMaxNewBytes
	}
	if opts.MaxTreeBytes <= 0 {
		opts.MaxTreeBytes = DefaultMaxTreeBytes
	}
	if opts.PruneEvery == 0 {
		opts.PruneEvery = DefaultPruneEvery
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Snapshots{
		opts:      opts,
		dir:       dir,
		log:       opts.Logger,
		blobs:     blobStore{dir: filepath.Join(dir, "blobs"), tmp: filepath.Join(dir, "tmp")},
		skip:      map[string]bool{},
		rootLocks: map[string]*sync.Mutex{},
		latest:    map[string]*manifest{},
		live:      map[string]bool{},
		restores:  map[string]bool{},
		racy:      racyWindow,
	}
	for _, name := range opts.Skip {
		s.skip[name] = true
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("undo: store folder %s: %w", dir, err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("undo: store folder %s: %w", dir, err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("undo: store folder %s is in use by another jean2 process (%w); give each server its own JEAN2_HOME", dir, err)
	}
	s.lock = lock
	s.realDir = policy.Real(dir)
	for _, sub := range []string{"manifests", "roots", "turns", "restores"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			s.Close()
			return nil, fmt.Errorf("undo: store folder %s: %w", dir, err)
		}
	}
	if err := s.blobs.init(); err != nil {
		s.Close()
		return nil, fmt.Errorf("undo: store folder %s: %w", dir, err)
	}
	return s, nil
}

// Close releases the store. Turns not filed stay recorded on disk for Interrupted.
func (s *Snapshots) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	// Wait for walks and prunes in progress.
	s.gc.Lock()
	defer s.gc.Unlock()
	if s.lock == nil {
		return nil
	}
	err := s.lock.Close() // closing the descriptor releases the flock
	if err != nil {
		return fmt.Errorf("undo: close store %s: %w", s.dir, err)
	}
	return nil
}

var errClosed = errors.New("undo: the snapshot store is closed")

// enter takes the shared side of gc for an operation that writes or reads the store.
func (s *Snapshots) enter() (func(), error) {
	s.gc.RLock()
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		s.gc.RUnlock()
		return nil, errClosed
	}
	return s.gc.RUnlock, nil
}

// rootLock returns the lock that serializes walks of one root.
func (s *Snapshots) rootLock(root string) *sync.Mutex {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.rootLocks[root]
	if l == nil {
		l = &sync.Mutex{}
		s.rootLocks[root] = l
	}
	return l
}

// latestFor returns the latest manifest of root (from memory, else from disk), or nil.
func (s *Snapshots) latestFor(root string) *manifest {
	s.mu.Lock()
	m := s.latest[root]
	s.mu.Unlock()
	if m != nil {
		return m
	}
	m = s.loadLatest(root)
	if m != nil {
		s.mu.Lock()
		if s.latest[root] == nil {
			s.latest[root] = m
		}
		s.mu.Unlock()
	}
	return m
}

// setLatest records m as root's latest manifest, in memory and on disk.
func (s *Snapshots) setLatest(m *manifest) error {
	s.mu.Lock()
	s.latest[m.root] = m
	s.mu.Unlock()
	return s.savePointer(m)
}

// isOwnDir reports whether path is the store's folder, which a walk of a root holding it
// must not record (it changes with every walk).
func (s *Snapshots) isOwnDir(path string) bool { return path == s.realDir }

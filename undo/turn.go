package undo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jean2/jean2/internal/fsutil"
	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/tool"
)

// TurnSpec names a turn and the folders it may change.
type TurnSpec struct {
	// ID is the turn's id (the harness's turn id); "" makes one. Letters, digits, '_', '-'
	// and '.' only, at most 128.
	ID string `json:"id"`
	// SessionID is the session the turn belongs to; File files the ledger under it.
	SessionID string `json:"sessionId"`
	// Roots are the folders snapshotted: the workspace folder and its extra allowed paths.
	// Absolute; symlinks are resolved, a root inside another is covered by it, and one that
	// does not exist or is not a folder is left out (Warnings say so).
	Roots []string `json:"roots"`
	// StartedAt is set by Begin (and read back by Interrupted).
	StartedAt time.Time `json:"startedAt"`
}

var turnIDPattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// Turn is one turn between Begin and File (or Discard). Safe for concurrent use.
type Turn struct {
	s        *Snapshots
	spec     TurnSpec
	roots    []turnRoot
	warnings []string

	mu       sync.Mutex
	finished bool
	changes  []tool.Change
	after    []store.UndoState
	done     bool
}

// turnRoot is one root of a turn: its state when the turn began, or why it is not tracked.
type turnRoot struct {
	Root      string `json:"root"`
	Manifest  string `json:"manifest,omitempty"`
	Untracked string `json:"untracked,omitempty"`
	begin     *manifest
}

// turnRecord is what turns/<id>.json holds from Begin until the turn is filed or discarded,
// so a turn a crash interrupted can still be finished after a restart (Resume).
type turnRecord struct {
	TurnSpec
	Tracked []turnRoot `json:"tracked"`
}

// ID is the turn's id.
func (t *Turn) ID() string { return t.spec.ID }

// Spec is what the turn was begun with, roots as tracked.
func (t *Turn) Spec() TurnSpec { return t.spec }

// Warnings say what the turn's snapshots do not cover: roots left out, roots too large.
func (t *Turn) Warnings() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.warnings)
}

// Begin records the state of every file under the roots, at the start of a turn: each
// path's kind, mode and stat, and the content of every file not already in the store. A
// root unchanged since the last walk costs a stat of each path and no read. Call it before
// the turn's first tool call; then Finish and File (or Discard) when the turn ends.
func (s *Snapshots) Begin(ctx context.Context, spec TurnSpec) (*Turn, error) {
	if spec.ID == "" {
		spec.ID = newTurnID()
	}
	if !turnIDPattern.MatchString(spec.ID) {
		return nil, fmt.Errorf("undo: begin turn %q: the id may hold only letters, digits, '_', '-' and '.' (1 to 128)", spec.ID)
	}
	leave, err := s.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	if err := s.claim(spec.ID); err != nil {
		return nil, err
	}
	t, err := s.begin(ctx, spec)
	if err != nil {
		s.release(spec.ID)
		return nil, fmt.Errorf("undo: begin turn %s: %w", spec.ID, err)
	}
	return t, nil
}

func (s *Snapshots) begin(ctx context.Context, spec TurnSpec) (*Turn, error) {
	roots, warnings, err := normalizeRoots(spec.Roots)
	if err != nil {
		return nil, err
	}
	spec.Roots = roots
	spec.StartedAt = time.Now().UTC()
	t := &Turn{s: s, spec: spec, warnings: warnings}
	for _, root := range roots {
		tr := turnRoot{Root: root}
		m, err := s.snapshotRoot(ctx, root, nil)
		switch {
		case errors.Is(err, errTooManyEntries):
			tr.Untracked = fmt.Sprintf("it holds more than %d entries", s.opts.MaxEntries)
			t.warnings = append(t.warnings, fmt.Sprintf("%s holds more than %d entries: changes made there other than through ctx.fs are not recorded this turn", root, s.opts.MaxEntries))
		case err != nil:
			return nil, err
		default:
			tr.Manifest, tr.begin = m.id, m
		}
		t.roots = append(t.roots, tr)
	}
	rec := turnRecord{TurnSpec: spec, Tracked: t.roots}
	data, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	if err := fsutil.WriteFileAtomic(s.turnPath(spec.ID), data); err != nil {
		return nil, fmt.Errorf("record the turn: %w", err)
	}
	return t, nil
}

// snapshotRoot walks root, reusing the hashes of base (the root's latest manifest when nil),
// stores the result when it changed, and makes it the root's latest.
func (s *Snapshots) snapshotRoot(ctx context.Context, root string, base *manifest) (*manifest, error) {
	l := s.rootLock(root)
	l.Lock()
	defer l.Unlock()
	if base == nil {
		base = s.latestFor(root)
	}
	m, changed, err := s.walkRoot(ctx, root, base)
	if err != nil {
		return nil, err
	}
	if !changed {
		m = base
	} else if err := s.saveManifest(m); err != nil {
		return nil, err
	}
	if err := s.setLatest(m); err != nil {
		return nil, err
	}
	return m, nil
}

// normalizeRoots resolves, checks and de-duplicates roots.
func normalizeRoots(roots []string) ([]string, []string, error) {
	var out, warnings []string
	for _, r := range roots {
		if r == "" {
			continue
		}
		if !filepath.IsAbs(r) {
			return nil, nil, fmt.Errorf("root %q is not an absolute path", r)
		}
		real := policy.Real(r)
		fi, err := os.Lstat(real)
		switch {
		case err != nil:
			warnings = append(warnings, fmt.Sprintf("%s is not tracked: %v", r, err))
			continue
		case !fi.IsDir():
			warnings = append(warnings, fmt.Sprintf("%s is not tracked: it is a %s, not a folder", r, describe(fi.Mode())))
			continue
		case real == string(filepath.Separator):
			warnings = append(warnings, "/ is not tracked: a snapshot of the whole file system is not kept")
			continue
		}
		out = append(out, real)
	}
	slices.SortFunc(out, comparePaths)
	out = slices.Compact(out)
	kept := out[:0]
	for _, r := range out {
		if len(kept) > 0 && (r == kept[len(kept)-1] || strings.HasPrefix(r, kept[len(kept)-1]+string(filepath.Separator))) {
			continue // inside a root already kept: covered by it
		}
		kept = append(kept, r)
	}
	return kept, warnings, nil
}

func newTurnID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "turn_" + time.Now().UTC().Format("20060102T150405") + "_" + hex.EncodeToString(b[:])
}

func (s *Snapshots) turnPath(id string) string {
	return filepath.Join(s.dir, "turns", id+".json")
}

// claim marks a turn id live in this process.
func (s *Snapshots) claim(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live[id] {
		return fmt.Errorf("undo: turn %s is already in progress", id)
	}
	s.live[id] = true
	return nil
}

func (s *Snapshots) release(id string) {
	s.mu.Lock()
	delete(s.live, id)
	s.mu.Unlock()
}

// Finish walks the roots again and returns the turn's ledger: a change for every path
// whose state differs from the turn's start (written by a shell command a tool ran, by any
// process) and that the recorded changes (ctx.fs's, with their undo data) do not already
// put back exactly, followed by the recorded changes unchanged. The changes found on disk
// come first, so their before-states (the turn's start) are the ones a restore uses. It
// also notes what the turn left at every path of the ledger, for File to store. Hand the
// result to File; Finish may be called once.
func (t *Turn) Finish(ctx context.Context, recorded []tool.Change) ([]tool.Change, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.done:
		return nil, fmt.Errorf("undo: finish turn %s: it was already filed or discarded", t.spec.ID)
	case t.finished:
		return nil, fmt.Errorf("undo: finish turn %s: it was already finished", t.spec.ID)
	}
	leave, err := t.s.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	var roots []rootDiff
	for _, tr := range t.roots {
		if tr.begin == nil {
			continue
		}
		after, err := t.s.snapshotRoot(ctx, tr.Root, tr.begin)
		if errors.Is(err, errTooManyEntries) {
			t.warnings = append(t.warnings, fmt.Sprintf("%s grew past %d entries during the turn: changes made there other than through ctx.fs are not recorded", tr.Root, t.s.opts.MaxEntries))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("undo: finish turn %s: %w", t.spec.ID, err)
		}
		roots = append(roots, rootDiff{root: tr.Root, begin: tr.begin, after: after})
	}
	res, err := t.s.diff(ctx, roots, recorded, time.Now())
	if err != nil {
		return nil, fmt.Errorf("undo: finish turn %s: %w", t.spec.ID, err)
	}
	t.finished, t.changes, t.after = true, res.changes, res.after
	t.warnings = append(t.warnings, res.warnings...)
	return slices.Clone(res.changes), nil
}

// File stores what Finish found: the record of what the turn left at each path (for
// Restore's check of changes made outside jean2), then the ledger, under messageID (the
// turn's last assistant message) in the turn's session, in one transaction. The turn is done
// after it.
func (t *Turn) File(ctx context.Context, db *store.DB, messageID string) (store.Ledger, error) {
	var l store.Ledger
	err := db.Batch(ctx, func(tx *store.Tx) error {
		var err error
		l, err = t.FileIn(ctx, tx, messageID)
		return err
	})
	if err != nil {
		return store.Ledger{}, err
	}
	t.Filed()
	return l, nil
}

// FileIn is File's writes within tx: the undo record, then the ledger, committed together
// (a turn's harness runs them fenced by its lease). Once tx committed, Filed ends the turn;
// until then FileIn may run again.
func (t *Turn) FileIn(ctx context.Context, tx *store.Tx, messageID string) (store.Ledger, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.done:
		return store.Ledger{}, fmt.Errorf("undo: file turn %s: it was already filed or discarded", t.spec.ID)
	case !t.finished:
		return store.Ledger{}, fmt.Errorf("undo: file turn %s: call Finish first", t.spec.ID)
	}
	err := tx.SaveUndoTurn(ctx, store.UndoTurn{MessageID: messageID, SessionID: t.spec.SessionID, TurnID: t.spec.ID,
		CreatedAt: time.Now(), After: t.after})
	if err != nil {
		return store.Ledger{}, fmt.Errorf("undo: file turn %s: %w", t.spec.ID, err)
	}
	l, err := tx.FileLedger(ctx, t.spec.SessionID, messageID, t.changes)
	if err != nil {
		return store.Ledger{}, fmt.Errorf("undo: file turn %s: %w", t.spec.ID, err)
	}
	return l, nil
}

// Filed ends a turn whose FileIn committed.
func (t *Turn) Filed() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.done {
		t.end()
	}
}

// Discard ends a turn without filing anything (a turn that drew no message). Its snapshot
// becomes garbage for Prune.
func (t *Turn) Discard() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return nil
	}
	t.end()
	return nil
}

// end forgets the turn: its record on disk, its claim; may prune. t.mu is held.
func (t *Turn) end() {
	t.done = true
	if err := os.Remove(t.s.turnPath(t.spec.ID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.s.log.Warn("undo: could not remove a finished turn's record", "turn", t.spec.ID, "err", err)
	}
	t.s.release(t.spec.ID)
	t.s.turnEnded()
}

// turnEnded counts ended turns and prunes every PruneEvery of them.
func (s *Snapshots) turnEnded() {
	if s.opts.PruneEvery < 0 {
		return
	}
	s.mu.Lock()
	s.sincePrune++
	due := s.sincePrune >= s.opts.PruneEvery
	if due {
		s.sincePrune = 0
	}
	s.mu.Unlock()
	if !due {
		return
	}
	if r, err := s.Prune(context.Background()); err != nil {
		s.log.Warn("undo: prune failed", "err", err)
	} else {
		s.log.Debug("undo: pruned", "blobs", r.Blobs, "bytes", r.Bytes, "manifests", r.Manifests)
	}
}

// Interrupted lists the turns begun and never filed or discarded, by any earlier process
// (a crash, a kill) or this one's turns not in progress. Resume one to file its changes,
// or Discard it.
func (s *Snapshots) Interrupted() ([]TurnSpec, error) {
	names, err := filepath.Glob(filepath.Join(s.dir, "turns", "*.json"))
	if err != nil {
		return nil, err
	}
	var out []TurnSpec
	for _, name := range names {
		id := strings.TrimSuffix(filepath.Base(name), ".json")
		s.mu.Lock()
		live := s.live[id]
		s.mu.Unlock()
		if live {
			continue
		}
		rec, err := s.readTurn(id)
		if err != nil {
			s.log.Warn("undo: unreadable turn record", "file", name, "err", err)
			continue
		}
		out = append(out, rec.TurnSpec)
	}
	slices.SortFunc(out, func(a, b TurnSpec) int { return a.StartedAt.Compare(b.StartedAt) })
	return out, nil
}

func (s *Snapshots) readTurn(id string) (turnRecord, error) {
	var rec turnRecord
	if !turnIDPattern.MatchString(id) {
		return rec, fmt.Errorf("invalid turn id %q", id)
	}
	data, err := os.ReadFile(s.turnPath(id))
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return rec, err
	}
	if rec.ID != id {
		return rec, fmt.Errorf("the record names turn %q", rec.ID)
	}
	return rec, nil
}

// Resume takes up a turn listed by Interrupted, with the snapshots its Begin took, so its
// changes can be found (Finish) and filed (File) or the turn dropped (Discard).
func (s *Snapshots) Resume(ctx context.Context, turnID string) (*Turn, error) {
	leave, err := s.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	rec, err := s.readTurn(turnID)
	if err != nil {
		return nil, fmt.Errorf("undo: resume turn %s: %w", turnID, err)
	}
	if err := s.claim(turnID); err != nil {
		return nil, err
	}
	t := &Turn{s: s, spec: rec.TurnSpec}
	for _, tr := range rec.Tracked {
		if tr.Untracked == "" {
			if tr.begin, err = s.loadManifest(tr.Manifest); err != nil {
				s.release(turnID)
				return nil, fmt.Errorf("undo: resume turn %s: %w", turnID, err)
			}
		} else {
			t.warnings = append(t.warnings, fmt.Sprintf("%s was not tracked: %s", tr.Root, tr.Untracked))
		}
		t.roots = append(t.roots, tr)
	}
	return t, nil
}

package undo

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// PruneReport says what Prune removed.
type PruneReport struct {
	Blobs     int   `json:"blobs"`
	Bytes     int64 `json:"bytes"`
	Manifests int   `json:"manifests"`
	Temp      int   `json:"temp"` // leftovers of writes a crash cut short
}

// Prune removes what no turn can need any more: manifests that are neither a root's latest
// nor the start of a turn not yet filed (in progress, or interrupted and waiting for
// Resume), and blobs that none of the kept manifests names. Ledgers never need the store:
// their changes carry the before-states whole. It runs by itself after every PruneEvery
// turns filed or discarded, and the server may call it at start. Walks wait while it runs.
func (s *Snapshots) Prune(ctx context.Context) (PruneReport, error) {
	s.gc.Lock()
	defer s.gc.Unlock()
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return PruneReport{}, errClosed
	}
	var r PruneReport
	keep, err := s.liveManifests()
	if err != nil {
		return r, fmt.Errorf("undo: prune: %w", err)
	}
	blobs := s.liveBlobs(keep)
	if err := ctx.Err(); err != nil {
		return r, err
	}
	if r.Manifests, err = s.pruneManifests(keep); err != nil {
		return r, fmt.Errorf("undo: prune: %w", err)
	}
	if err := s.pruneBlobs(ctx, blobs, &r); err != nil {
		return r, err
	}
	r.Temp = s.pruneTemp()
	return r, nil
}

// liveBlobs are the blobs the kept manifests name.
func (s *Snapshots) liveBlobs(keep map[string]bool) map[digest]bool {
	blobs := map[digest]bool{}
	for id := range keep {
		m, err := s.loadManifest(id)
		if err != nil {
			// A manifest that cannot be read names no blob we can know of; keeping every blob
			// would keep garbage forever, so the turn that needs it loses it (its restore then
			// says which copy is missing) — but never silently.
			s.log.Warn("undo: prune: a snapshot still in use cannot be read", "manifest", id, "err", err)
			continue
		}
		for i := range m.entries {
			if m.entries[i].hashed {
				blobs[m.entries[i].hash] = true
			}
		}
	}
	return blobs
}

// pruneManifests removes every manifest not kept and returns how many went.
func (s *Snapshots) pruneManifests(keep map[string]bool) (int, error) {
	names, err := os.ReadDir(filepath.Join(s.dir, "manifests"))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range names {
		if keep[e.Name()] {
			continue
		}
		if err := os.Remove(filepath.Join(s.dir, "manifests", e.Name())); err == nil {
			n++
		}
	}
	return n, nil
}

// pruneBlobs removes every file of the blob store that is not a live blob (a name that is
// not a digest included), counting them and their bytes into r.
func (s *Snapshots) pruneBlobs(ctx context.Context, live map[digest]bool, r *PruneReport) error {
	fanout, err := os.ReadDir(s.blobs.dir)
	if err != nil {
		return fmt.Errorf("undo: prune: %w", err)
	}
	for _, sub := range fanout {
		if err := ctx.Err(); err != nil {
			return err
		}
		dir := filepath.Join(s.blobs.dir, sub.Name())
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			var d digest
			raw, err := hex.DecodeString(sub.Name() + e.Name())
			if err == nil && len(raw) == len(d) {
				copy(d[:], raw)
				if live[d] {
					continue
				}
			}
			info, _ := e.Info()
			if err := os.Remove(filepath.Join(dir, e.Name())); err == nil {
				r.Blobs++
				if info != nil {
					r.Bytes += info.Size()
				}
			}
		}
	}
	return nil
}

// pruneTemp empties tmp/ and returns how many entries went. Nothing writes while gc is
// held, so whatever is there is a leftover.
func (s *Snapshots) pruneTemp() int {
	tmp, err := os.ReadDir(s.blobs.tmp)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range tmp {
		if os.RemoveAll(filepath.Join(s.blobs.tmp, e.Name())) == nil {
			n++
		}
	}
	return n
}

// liveManifests returns the ids of the manifests still needed: every root's latest and the
// start of every turn recorded in turns/.
func (s *Snapshots) liveManifests() (map[string]bool, error) {
	keep := map[string]bool{}
	pointers, err := os.ReadDir(filepath.Join(s.dir, "roots"))
	if err != nil {
		return nil, err
	}
	for _, e := range pointers {
		data, err := os.ReadFile(filepath.Join(s.dir, "roots", e.Name()))
		if err != nil {
			continue
		}
		var p rootPointer
		if json.Unmarshal(data, &p) == nil && validID(p.Manifest) {
			keep[p.Manifest] = true
		}
	}
	turns, err := os.ReadDir(filepath.Join(s.dir, "turns"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range turns {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		rec, err := s.readTurn(id)
		if err != nil {
			// An unreadable record cannot be resumed anyway; say so, keep going.
			s.log.Warn("undo: prune: unreadable turn record", "turn", id, "err", err)
			continue
		}
		for _, tr := range rec.Tracked {
			if validID(tr.Manifest) {
				keep[tr.Manifest] = true
			}
		}
	}
	return keep, nil
}

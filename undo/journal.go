package undo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jean2/jean2/internal/fsutil"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/tool"
)

// Journal records a restore while it changes files: written (synced) before the first file
// is put back, removed once its ledgers are marked restored. A journal that outlives its
// process names a restore a crash cut short: some of its files may be back, its ledgers are
// not marked, and without it the next restore would take jean2's own writes for changes
// made outside jean2.
type Journal struct {
	SessionID string    `json:"sessionId"`
	MessageID string    `json:"messageId"`
	Ledgers   []string  `json:"ledgers"` // ids of the ledgers being undone
	Forced    bool      `json:"forced,omitempty"`
	Partial   bool      `json:"partial,omitempty"`
	StartedAt time.Time `json:"startedAt"`
}

func (s *Snapshots) journalPath(sessionID string) string {
	return filepath.Join(s.dir, "restores", sessionID+".json")
}

func (s *Snapshots) writeJournal(j Journal) error {
	if !turnIDPattern.MatchString(j.SessionID) {
		return fmt.Errorf("journal the restore: invalid session id %q", j.SessionID)
	}
	data, err := json.Marshal(j)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.journalPath(j.SessionID)), 0o700); err != nil {
		return fmt.Errorf("journal the restore: %w", err)
	}
	if err := fsutil.WriteFileAtomicPerm(s.journalPath(j.SessionID), data, 0o600); err != nil {
		return fmt.Errorf("journal the restore: %w", err)
	}
	return nil
}

func (s *Snapshots) removeJournal(sessionID string) error {
	if err := os.Remove(s.journalPath(sessionID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the journal of the restore of session %s: %w", sessionID, err)
	}
	return nil
}

// readJournal returns the journal left for a session, or ok false when there is none.
func (s *Snapshots) readJournal(sessionID string) (Journal, bool, error) {
	var j Journal
	if !turnIDPattern.MatchString(sessionID) {
		return j, false, fmt.Errorf("invalid session id %q", sessionID)
	}
	data, err := os.ReadFile(s.journalPath(sessionID))
	if errors.Is(err, fs.ErrNotExist) {
		return j, false, nil
	}
	if err != nil {
		return j, false, fmt.Errorf("read the journal of a restore of session %s: %w", sessionID, err)
	}
	if err := json.Unmarshal(data, &j); err != nil || j.SessionID != sessionID {
		return j, false, fmt.Errorf("the journal of a restore of session %s (%s) is damaged: %v", sessionID, s.journalPath(sessionID), err)
	}
	return j, true, nil
}

// CutShort lists the restores a crash (or kill) cut short: journaled and never completed.
// Complete each with ResumeRestore; Restore in the same session also completes it first.
func (s *Snapshots) CutShort() ([]Journal, error) {
	names, err := filepath.Glob(filepath.Join(s.dir, "restores", "*.json"))
	if err != nil {
		return nil, err
	}
	var out []Journal
	for _, name := range names {
		id := strings.TrimSuffix(filepath.Base(name), ".json")
		if s.restoring(id) {
			continue
		}
		j, ok, err := s.readJournal(id)
		if err != nil {
			return nil, fmt.Errorf("undo: %w", err)
		}
		if ok {
			out = append(out, j)
		}
	}
	slices.SortFunc(out, func(a, b Journal) int { return a.StartedAt.Compare(b.StartedAt) })
	return out, nil
}

// restoring reports whether this process is running a restore of the session now.
func (s *Snapshots) restoring(sessionID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restores[sessionID]
}

// claimRestore marks a restore of the session running in this process; the caller makes
// sure no two run at once (the harness reserves the session).
func (s *Snapshots) claimRestore(sessionID string) (func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.restores[sessionID] {
		return nil, fmt.Errorf("undo: a restore of session %s is already running", sessionID)
	}
	s.restores[sessionID] = true
	return func() {
		s.mu.Lock()
		delete(s.restores, sessionID)
		s.mu.Unlock()
	}, nil
}

// ResumeRestore completes the restore a crash cut short in a session (see CutShort): it
// puts back every path of the journaled ledgers still unrestored, without the check for
// changes made outside jean2 — that check passed (or was forced) before the crash, and
// what it would now find are the interrupted restore's own writes — then marks the ledgers
// restored and removes the journal. The report has AfterCrash set. ok is false when no
// restore of the session was cut short.
func (s *Snapshots) ResumeRestore(ctx context.Context, db *store.DB, sessionID string) (report Report, ok bool, err error) {
	done, err := s.claimRestore(sessionID)
	if err != nil {
		return Report{}, false, err
	}
	defer done()
	return s.resumeRestore(ctx, db, sessionID)
}

func (s *Snapshots) resumeRestore(ctx context.Context, db *store.DB, sessionID string) (Report, bool, error) {
	j, ok, err := s.readJournal(sessionID)
	if err != nil || !ok {
		return Report{}, false, err
	}
	report := newReport(j.MessageID, false)
	report.AfterCrash, report.Forced = true, j.Forced
	fail := func(err error) (Report, bool, error) {
		return report, true, fmt.Errorf("undo: complete the restore of session %s to message %s that a crash cut short: %w", sessionID, j.MessageID, err)
	}
	ledgers, err := db.RestorePoint(ctx, j.MessageID)
	if err != nil {
		return fail(err)
	}
	var active []store.Ledger
	for _, l := range ledgers {
		if l.RestoredAt.IsZero() && slices.Contains(j.Ledgers, l.ID) {
			active = append(active, l)
			report.Ledgers = append(report.Ledgers, l.ID)
		}
	}
	var apply []tool.Change
	for _, c := range planRestore(active) {
		if reason := cannotRestore(c); reason != "" {
			report.Unrestorable = append(report.Unrestorable, Problem{Path: c.Path, Reason: reason})
			continue
		}
		apply = append(apply, c)
	}
	if len(report.Unrestorable) > 0 && !j.Partial {
		// The journaled restore checked these before it began; something changed since.
		return fail(&RefusedError{Unrestorable: report.Unrestorable})
	}
	report.Unrestorable = append(report.Unrestorable, untrackedTurns(active)...)
	if err := s.applyAndMark(ctx, db, &report, apply, active); err != nil {
		return fail(err)
	}
	return report, true, nil
}

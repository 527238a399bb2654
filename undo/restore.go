package undo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/tool"
	"github.com/jean2/jean2/toolfs"
)

// RestoreOptions tune Restore.
type RestoreOptions struct {
	// Force restores over paths changed outside jean2 since jean2 last changed them (the
	// Conflicts), losing those changes.
	Force bool `json:"force,omitempty"`
	// DryRun changes nothing: the report is the plan (what would be restored, recreated,
	// removed) with the conflicts and the paths that cannot be restored, for a confirmation.
	DryRun bool `json:"dryRun,omitempty"`
	// Partial restores what can be and lists the rest in Unrestorable, instead of refusing
	// the whole restore when a path cannot be put back (a file too large to have been
	// copied, a named pipe).
	Partial bool `json:"partial,omitempty"`
}

// Problem is one path and what is wrong with it.
type Problem struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Report says what Restore did, or, with DryRun or when it refused, what it would do.
type Report struct {
	MessageID string   `json:"messageId"`
	DryRun    bool     `json:"dryRun,omitempty"`
	Forced    bool     `json:"forced,omitempty"` // conflicts were overridden
	Applied   bool     `json:"applied"`          // files were changed
	Ledgers   []string `json:"ledgers"`          // ids of the ledgers undone (or to be)
	Restored  []string `json:"restored"`         // existed before and now: content, mode, entries put back
	Recreated []string `json:"recreated"`        // existed before, absent now: made again
	Removed   []string `json:"removed"`          // did not exist before: removed
	// Conflicts are paths changed outside jean2 since the session's last change to them;
	// Restore refuses while there are any, unless forced.
	Conflicts []Problem `json:"conflicts"`
	// Unrestorable are paths that cannot be put back exactly; Restore refuses while there
	// are any, unless Partial (then they are left as they are).
	Unrestorable []Problem `json:"unrestorable"`
	// Unverified are paths changed by turns filed without an undo record (not through
	// Turn.File): they cannot be checked for changes made outside jean2.
	Unverified []string `json:"unverified"`
	// Errors are paths that failed while being put back.
	Errors []Problem `json:"errors"`
	// AfterCrash: this is a restore a crash (or kill) cut short, completed by a later
	// process (ResumeRestore).
	AfterCrash bool `json:"afterCrash,omitempty"`
	// Resumed is the report of the session's restore a crash cut short, which this restore
	// completed before doing its own.
	Resumed *Report `json:"resumed,omitempty"`
	// CutShort (DryRun only) names the message of the session's restore a crash cut short:
	// a restore completes it first.
	CutShort string `json:"cutShort,omitempty"`
}

// ErrRefused is wrapped by Restore's error when it changed nothing because of Conflicts or
// Unrestorable paths; the report lists them.
var ErrRefused = errors.New("restore refused")

// RefusedError is Restore's error when it refused; errors.Is(err, ErrRefused).
type RefusedError struct {
	Conflicts    []Problem
	Unrestorable []Problem
}

func (e *RefusedError) Error() string {
	var b strings.Builder
	b.WriteString("restore refused, nothing was changed")
	if len(e.Conflicts) > 0 {
		b.WriteString("; changed outside jean2 since (restore with force to overwrite): ")
		writeProblems(&b, e.Conflicts)
	}
	if len(e.Unrestorable) > 0 {
		b.WriteString("; cannot be put back (restore with partial to leave them as they are): ")
		writeProblems(&b, e.Unrestorable)
	}
	return b.String()
}

func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

func writeProblems(b *strings.Builder, ps []Problem) {
	for i, p := range ps {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(b, "%s: %s", p.Path, p.Reason)
	}
}

// Restore is "Restore to here" at a message of a session: every path the session changed
// from that message on (its turns' ledgers, ctx.fs changes and changes found on disk alike)
// goes back to what it was before the earliest of those changes — content and mode, created
// paths removed, removed ones recreated. Ledgers already restored are left out (their
// changes were undone). Before changing anything it checks each path against what the
// session's last turn left there and refuses, naming the paths, when one was changed
// outside jean2 since (unless opts.Force), or when one cannot be put back exactly (unless
// opts.Partial); a turn that ran without undo snapshots is such a case. The ledgers are
// marked restored when everything was put back. A restore of the session that a crash cut
// short is completed first (Report.Resumed). It needs only the database, so it works in a
// new process after a restart; the caller makes sure no turn of the session runs meanwhile.
func (s *Snapshots) Restore(ctx context.Context, db *store.DB, sessionID, messageID string, opts RestoreOptions) (Report, error) {
	report := newReport(messageID, opts.DryRun)
	fail := func(err error) (Report, error) {
		return report, fmt.Errorf("undo: restore session %s to message %s: %w", sessionID, messageID, err)
	}
	msg, err := db.Message(ctx, messageID)
	if err != nil {
		return fail(err)
	}
	if msg.SessionID != sessionID {
		return fail(fmt.Errorf("the message belongs to session %s", msg.SessionID))
	}
	done, err := s.claimRestore(sessionID)
	if err != nil {
		return fail(err)
	}
	defer done()
	// A restore a crash cut short comes first: until its ledgers are marked, its own writes
	// would look like changes made outside jean2.
	var resumed *Report
	var pending string
	if opts.DryRun {
		j, ok, err := s.readJournal(sessionID)
		if err != nil {
			return fail(err)
		}
		if ok {
			pending = j.MessageID
		}
	} else {
		r, ok, err := s.resumeRestore(ctx, db, sessionID)
		if ok {
			resumed = &r
		}
		if err != nil {
			report.Resumed = resumed
			return report, err
		}
	}
	report, apply, active, err := s.planAndCheck(ctx, db, messageID, opts)
	report.Resumed, report.CutShort = resumed, pending
	if err != nil {
		return fail(err)
	}
	if opts.DryRun {
		return report, nil
	}
	refuse := &RefusedError{}
	if len(report.Conflicts) > 0 && !opts.Force {
		refuse.Conflicts = report.Conflicts
	}
	if len(report.Unrestorable) > 0 && !opts.Partial {
		refuse.Unrestorable = report.Unrestorable
	}
	if len(refuse.Conflicts)+len(refuse.Unrestorable) > 0 {
		return report, refuse
	}
	report.Forced = len(report.Conflicts) > 0
	if len(active) == 0 {
		return report, nil
	}
	if err := s.writeJournal(Journal{SessionID: sessionID, MessageID: messageID, Ledgers: report.Ledgers,
		Forced: report.Forced, Partial: opts.Partial, StartedAt: time.Now().UTC()}); err != nil {
		return fail(err)
	}
	if err := s.applyAndMark(ctx, db, &report, apply, active); err != nil {
		var refused *RefusedError
		if errors.As(err, &refused) {
			return report, err
		}
		return fail(err)
	}
	return report, nil
}

func newReport(messageID string, dryRun bool) Report {
	return Report{MessageID: messageID, DryRun: dryRun, Ledgers: []string{}, Restored: []string{}, Recreated: []string{},
		Removed: []string{}, Conflicts: []Problem{}, Unrestorable: []Problem{}, Unverified: []string{}, Errors: []Problem{}}
}

// planAndCheck makes the restore's plan over the ledgers from messageID on not yet restored,
// and checks every path of it: the report lists what would be restored, recreated and
// removed, the conflicts and the unrestorable paths; apply is what can be put back.
func (s *Snapshots) planAndCheck(ctx context.Context, db *store.DB, messageID string, opts RestoreOptions) (Report, []tool.Change, []store.Ledger, error) {
	report := newReport(messageID, opts.DryRun)
	ledgers, err := db.RestorePoint(ctx, messageID)
	if err != nil {
		return report, nil, nil, err
	}
	var active []store.Ledger
	var msgIDs []string
	for _, l := range ledgers {
		if l.RestoredAt.IsZero() {
			active = append(active, l)
			msgIDs = append(msgIDs, l.MessageID)
			report.Ledgers = append(report.Ledgers, l.ID)
		}
	}
	records, err := db.UndoTurns(ctx, msgIDs...)
	if err != nil {
		return report, nil, nil, err
	}
	report.Unrestorable = append(report.Unrestorable, untrackedTurns(active)...)
	left := replayAfter(active, records)
	unverified := map[string]bool{}
	var apply []tool.Change
	for _, c := range planRestore(active) {
		if reason := cannotRestore(c); reason != "" {
			report.Unrestorable = append(report.Unrestorable, Problem{Path: c.Path, Reason: reason})
			continue
		}
		current, err := s.stateNow(c.Path)
		if err != nil {
			report.Unrestorable = append(report.Unrestorable, Problem{Path: c.Path, Reason: "it cannot be examined: " + err.Error()})
			continue
		}
		conflicts, err := s.verify(ctx, c, current, left, unverified)
		if err != nil {
			return report, nil, nil, err
		}
		report.Conflicts = append(report.Conflicts, conflicts...)
		switch {
		case c.Before.Exists && current.Exists:
			report.Restored = append(report.Restored, c.Path)
		case c.Before.Exists:
			report.Recreated = append(report.Recreated, c.Path)
		case current.Exists:
			report.Removed = append(report.Removed, c.Path)
		}
		apply = append(apply, c)
	}
	for p := range unverified {
		report.Unverified = append(report.Unverified, p)
	}
	slices.SortFunc(report.Unverified, comparePaths)
	return report, apply, active, nil
}

// cannotRestore says why a planned change cannot be put back, or "".
func cannotRestore(c tool.Change) string {
	if reason := undoProblem(c); reason != "" {
		return reason
	}
	if real := policy.Real(filepath.Dir(c.Path)); real != filepath.Dir(c.Path) {
		return "its parent directory now leads to " + real + " through a symlink; not following it"
	}
	return ""
}

// applyAndMark puts the plan back, then marks the ledgers restored and removes the
// restore's journal. When paths failed, the ledgers stay unrestored (the report's Errors
// name them) and the journal goes: the person was told, nothing was cut short.
func (s *Snapshots) applyAndMark(ctx context.Context, db *store.DB, report *Report, apply []tool.Change, active []store.Ledger) error {
	sessionID := ""
	if len(active) > 0 {
		sessionID = active[0].SessionID
	}
	done, applyErr := toolfs.RestoreWith(apply, toolfs.RestoreOptions{})
	if s.afterApply != nil {
		s.afterApply()
	}
	report.Applied = true
	report.Restored, report.Recreated, report.Removed = orEmpty(done.Restored), orEmpty(done.Recreated), orEmpty(done.Removed)
	if applyErr != nil {
		if err := s.removeJournal(sessionID); err != nil {
			s.log.Warn("undo: restore", "err", err)
		}
		var refusal *toolfs.RestoreRefusal
		if errors.As(applyErr, &refusal) {
			// Our own checks ran first, so this means the ledger changed under us.
			report.Applied = false
			for _, p := range refusal.Problems {
				report.Unrestorable = append(report.Unrestorable, Problem{Path: p.Path, Reason: p.Reason})
			}
			return &RefusedError{Unrestorable: report.Unrestorable}
		}
		for _, e := range splitJoined(applyErr) {
			report.Errors = append(report.Errors, Problem{Path: pathOfError(e), Reason: e.Error()})
		}
		return fmt.Errorf("%d paths could not be put back (the ledgers stay unrestored; restore again with force once fixed): %w", len(report.Errors), applyErr)
	}
	ids := make([]string, len(active))
	for i, l := range active {
		ids[i] = l.ID
	}
	if err := db.MarkRestored(ctx, ids...); err != nil {
		return err // the journal stays: the next restore completes this one
	}
	return s.removeJournal(sessionID)
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func splitJoined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// pathOfError takes the path toolfs puts at the head of each of its errors ("restore PATH: …").
func pathOfError(err error) string {
	msg := strings.TrimPrefix(err.Error(), "restore ")
	if p, _, ok := strings.Cut(msg, ": "); ok {
		return p
	}
	return ""
}

// planRestore picks what toolfs.RestoreWith would apply: for each path the earliest change
// that reached the disk, leaving out paths below one whose earliest change came before
// theirs (that ancestor's before-state decides everything below it). In order of those
// earliest changes.
func planRestore(ledgers []store.Ledger) []tool.Change {
	var plan []tool.Change
	seen := map[string]bool{}
	for _, l := range ledgers {
		for _, c := range l.Changes {
			if !c.Disk || c.Op == OpUntracked || seen[c.Path] {
				continue
			}
			seen[c.Path] = true
			plan = append(plan, c)
		}
	}
	earlier := map[string]bool{}
	kept := plan[:0:0]
	for _, c := range plan {
		covered := false
		for dir := filepath.Dir(c.Path); ; dir = filepath.Dir(dir) {
			if earlier[dir] {
				covered = true
				break
			}
			if dir == filepath.Dir(dir) {
				break
			}
		}
		earlier[c.Path] = true
		if !covered {
			kept = append(kept, c)
		}
	}
	return kept
}

// undoProblem says why a change's before-state cannot be put back exactly, or "".
func undoProblem(c tool.Change) string {
	switch {
	case !filepath.IsAbs(c.Path) || filepath.Clean(c.Path) != c.Path:
		return "the ledger path is not absolute and clean"
	case c.Path == string(filepath.Separator):
		return "the root directory cannot be restored"
	case c.Before == nil:
		return "no undo data was recorded for this change (the tool recorded it itself, not through ctx.fs, and no snapshot covered it)"
	}
	return stateProblem(c.Before)
}

func stateProblem(st *tool.FileState) string {
	if st.Incomplete != "" {
		return st.Incomplete
	}
	for i := range st.Entries {
		e := &st.Entries[i]
		if e.Name == "" || e.Name == "." || e.Name == ".." || strings.ContainsAny(e.Name, "/\x00") {
			return fmt.Sprintf("the undo data holds an invalid entry name %q", e.Name)
		}
		if p := stateProblem(&e.State); p != "" {
			return p
		}
	}
	return ""
}

// slot is what the session's turns last left at a path, replayed over the ledgers.
type slot struct {
	state *store.UndoState // nil: unknown (a turn without an undo record changed it)
	// cleared: at some point the path was absent or not a directory, so anything below it
	// that no later turn recorded must be absent.
	cleared bool
	// unknownTree: a turn without an undo record changed the path; what lies below is
	// unknown too.
	unknownTree bool
}

// afterMap holds the replay: path → slot.
type afterMap map[string]*slot

// replayAfter computes what the session's turns left, in ledger order: each turn's record
// replaces the state of the paths it names, and a path left absent (or not a directory)
// clears what was known below it.
func replayAfter(ledgers []store.Ledger, records map[string]store.UndoTurn) afterMap {
	left := afterMap{}
	clearBelow := func(p string) {
		prefix := p + string(filepath.Separator)
		for q := range left {
			if strings.HasPrefix(q, prefix) {
				delete(left, q)
			}
		}
	}
	for _, l := range ledgers {
		rec, ok := records[l.MessageID]
		if !ok {
			for _, c := range l.Changes {
				if c.Disk {
					clearBelow(c.Path)
					left[c.Path] = &slot{unknownTree: true}
				}
			}
			continue
		}
		states := slices.Clone(rec.After)
		slices.SortFunc(states, func(a, b store.UndoState) int { return comparePaths(a.Path, b.Path) })
		for i := range states {
			st := &states[i]
			prev := left[st.Path]
			if !st.Exists || st.Kind != "dir" {
				clearBelow(st.Path)
				left[st.Path] = &slot{state: st, cleared: true}
				continue
			}
			next := &slot{state: st}
			if prev != nil && (prev.cleared || prev.unknownTree) {
				next.cleared = true // what lay below went away once; only what was recorded since is known
			}
			left[st.Path] = next
		}
	}
	return left
}

// expected is what the session left at path: its recorded state; or absent, below a path
// that was cleared; or, when no turn since the restore point touched it, the state the
// restore would put there (the path is then unchanged by the session: it must still hold
// that). ok is false when it cannot be known.
func (left afterMap) expected(path string, planned func() (store.UndoState, bool)) (store.UndoState, bool) {
	if sl := left[path]; sl != nil {
		if sl.state == nil {
			return store.UndoState{}, false
		}
		return *sl.state, true
	}
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		if sl := left[dir]; sl != nil {
			if sl.unknownTree {
				return store.UndoState{}, false
			}
			if sl.cleared {
				return store.UndoState{Path: path}, true
			}
		}
		if dir == filepath.Dir(dir) {
			break
		}
	}
	return planned()
}

// verify compares what stands at the change's path (and, for a directory, everything below
// it, which putting the path back replaces) with what the session left there. Paths whose
// last change is unknown go into unverified.
func (s *Snapshots) verify(ctx context.Context, c tool.Change, current store.UndoState, left afterMap, unverified map[string]bool) ([]Problem, error) {
	var out []Problem
	check := func(path string, cur store.UndoState) {
		exp, ok := left.expected(path, func() (store.UndoState, bool) { return plannedState(c, path) })
		if !ok {
			unverified[path] = true
			return
		}
		if reason := differs(cur, exp); reason != "" {
			out = append(out, Problem{Path: path, Reason: reason})
		}
	}
	check(c.Path, current)
	if !current.Exists || current.Kind != "dir" {
		// Expected entries below a path that is no longer a directory are covered by the
		// path's own conflict.
		return out, nil
	}
	// Everything below stands to be replaced: what is there now, and what should be.
	seen := map[string]bool{}
	count := 0
	err := s.walkCurrent(ctx, c.Path, func(path string, cur store.UndoState) error {
		if count++; count > s.opts.MaxEntries {
			return fmt.Errorf("%s holds more than %d entries to check", c.Path, s.opts.MaxEntries)
		}
		seen[path] = true
		check(path, cur)
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		out = append(out, Problem{Path: c.Path, Reason: err.Error()})
		return out, nil
	}
	var missing []string
	for p, sl := range left {
		if strings.HasPrefix(p, c.Path+string(filepath.Separator)) && !seen[p] && sl.state != nil && sl.state.Exists {
			missing = append(missing, p)
		}
	}
	forEachPlanned(c.Before, c.Path, func(p string) {
		if !seen[p] {
			missing = append(missing, p)
		}
	})
	slices.SortFunc(missing, comparePaths)
	missing = slices.Compact(missing)
	for _, p := range missing {
		if s.belowSkipped(c.Path, p) {
			continue
		}
		check(p, store.UndoState{Path: p})
	}
	return out, nil
}

// belowSkipped reports whether p lies below a skipped name under top: the walk of the
// current state does not enter those, so they are not compared.
func (s *Snapshots) belowSkipped(top, p string) bool {
	rest := strings.TrimPrefix(p, top+string(filepath.Separator))
	for name := range strings.SplitSeq(rest, string(filepath.Separator)) {
		if s.skip[name] {
			return true
		}
	}
	return false
}

// walkCurrent calls fn for every path below dir, as it stands, without following links and
// without entering skipped names (what lies below them goes with their directory).
func (s *Snapshots) walkCurrent(ctx context.Context, dir string, fn func(string, store.UndoState) error) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("%s cannot be listed: %w", dir, err)
	}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.skip[e.Name()] {
			continue
		}
		p := filepath.Join(dir, e.Name())
		st, err := s.stateNow(p)
		if err != nil {
			return fmt.Errorf("%s cannot be examined: %w", p, err)
		}
		if err := fn(p, st); err != nil {
			return err
		}
		if st.Exists && st.Kind == "dir" {
			if err := s.walkCurrent(ctx, p, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// plannedState is the state the change's before-state gives path (the change's path or one
// below it), as a comparable UndoState.
func plannedState(c tool.Change, path string) (store.UndoState, bool) {
	st := c.Before
	if st == nil || st.Incomplete != "" {
		return store.UndoState{}, false
	}
	if path != c.Path {
		rest := strings.TrimPrefix(path, c.Path+string(filepath.Separator))
		for name := range strings.SplitSeq(rest, string(filepath.Separator)) {
			if !st.Exists || !st.IsDir {
				return store.UndoState{Path: path}, true
			}
			var next *tool.FileState
			for i := range st.Entries {
				if st.Entries[i].Name == name {
					next = &st.Entries[i].State
					break
				}
			}
			if next == nil {
				return store.UndoState{Path: path}, true
			}
			st = next
		}
	}
	return undoStateOfFileState(path, st), true
}

func undoStateOfFileState(path string, st *tool.FileState) store.UndoState {
	if !st.Exists {
		return store.UndoState{Path: path}
	}
	out := store.UndoState{Path: path, Exists: true, Kind: kindOfMode(st.Mode).String(), Mode: st.Mode}
	switch {
	case st.IsDir:
		out.Kind = "dir"
	case st.Mode&fs.ModeSymlink != 0:
		out.Target = string(st.Content)
	case st.Mode.IsRegular():
		sum := sha256.Sum256(st.Content)
		out.Size, out.Hash = int64(len(st.Content)), sum[:]
	}
	return out
}

// forEachPlanned calls fn for every path below top that the before-state st holds.
func forEachPlanned(st *tool.FileState, top string, fn func(string)) {
	if st == nil {
		return
	}
	for i := range st.Entries {
		p := filepath.Join(top, st.Entries[i].Name)
		fn(p)
		forEachPlanned(&st.Entries[i].State, p, fn)
	}
}

// differs says how cur is not exp, for a person, or "".
func differs(cur, exp store.UndoState) string {
	switch {
	case !exp.Exists && !cur.Exists:
		return ""
	case !exp.Exists:
		return fmt.Sprintf("a %s was made there outside jean2 since (jean2 left nothing there)", kindName(cur))
	case !cur.Exists:
		return fmt.Sprintf("it was removed outside jean2 since (jean2 left a %s there)", kindName(exp))
	case cur.Kind != exp.Kind:
		return fmt.Sprintf("it was replaced by a %s outside jean2 since (jean2 left a %s there)", kindName(cur), kindName(exp))
	}
	switch exp.Kind {
	case "file":
		switch {
		case exp.Hash != nil && cur.Hash != nil && !bytes.Equal(exp.Hash, cur.Hash),
			cur.Size != exp.Size,
			exp.Hash == nil && cur.ModTime != exp.ModTime:
			return "its content was changed outside jean2 since"
		case exp.Hash != nil && cur.Hash == nil:
			return "it can no longer be read to compare with what jean2 left (too large, or no permission)"
		}
	case "symlink":
		if cur.Target != exp.Target {
			return fmt.Sprintf("the link was pointed at %q outside jean2 since (jean2 left it pointing at %q)", cur.Target, exp.Target)
		}
	case "other":
		if cur.Size != exp.Size || cur.ModTime != exp.ModTime {
			return "it was changed outside jean2 since"
		}
	}
	if cur.Mode != exp.Mode {
		return fmt.Sprintf("its mode was changed outside jean2 since (%v, jean2 left %v)", cur.Mode, exp.Mode)
	}
	return ""
}

func kindName(st store.UndoState) string {
	switch st.Kind {
	case "dir":
		return "directory"
	case "other":
		return "special file"
	case "":
		return "nothing"
	}
	return st.Kind
}

// OpUntracked is the op of the change a turn that ran without undo snapshots puts in its
// ledger (UntrackedChange): what it changed other than through ctx.fs is not known, so a
// restore over it cannot be complete.
const OpUntracked = "untracked"

// UntrackedChange is the ledger entry of a turn that ran without undo snapshots (the person
// chose to go on without them): Restore over that turn then refuses, naming root and why,
// unless Partial, instead of reporting success for changes it never saw.
func UntrackedChange(root, why string) tool.Change {
	return tool.Change{Path: root, Tool: "(undo)", Op: OpUntracked, Disk: true, OK: true, At: time.Now().UTC(),
		Before: &tool.FileState{Exists: true, IsDir: true, Incomplete: "the turn ran without undo snapshots (" + why +
			"): what it changed here other than through ctx.fs was not recorded and cannot be put back"}}
}

// untrackedTurns names the turns among ledgers that ran without undo snapshots.
func untrackedTurns(ledgers []store.Ledger) []Problem {
	var out []Problem
	for _, l := range ledgers {
		for _, c := range l.Changes {
			if c.Op == OpUntracked {
				reason := "a turn ran without undo snapshots"
				if c.Before != nil {
					reason = c.Before.Incomplete
				}
				out = append(out, Problem{Path: c.Path, Reason: reason})
			}
		}
	}
	return out
}

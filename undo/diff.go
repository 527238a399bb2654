package undo

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	unix "github.com/jean2/jean2/internal/xunix"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/tool"
)

// ToolOutside is the Tool of a ledger change found by comparing snapshots: made by
// something other than ctx.fs (a shell command a tool ran, a process it started).
const ToolOutside = "(outside ctx.fs)"

// Ops of changes found by comparing snapshots, besides toolfs's write, mkdir and rm.
const (
	OpChmod   = "chmod"   // only the mode changed
	OpSymlink = "symlink" // a symlink was made or pointed elsewhere
)

// entryOverhead is what each entry of a directory tree costs against MaxTreeBytes besides
// its content and name, as in toolfs.
const entryOverhead = 64

// rootDiff is one tracked root's state at the turn's start and end.
type rootDiff struct {
	root         string
	begin, after *manifest
}

// recordedIndex answers, for a path, what the recorded (ctx.fs) changes alone would put
// back there: the before-state of the earliest change at the path or at an ancestor.
type recordedIndex struct {
	changes []tool.Change
	first   map[string]int // path → index of its earliest change that reached the disk
}

func indexRecorded(changes []tool.Change) *recordedIndex {
	r := &recordedIndex{changes: changes, first: map[string]int{}}
	for i, c := range changes {
		if !c.Disk {
			continue
		}
		if _, ok := r.first[c.Path]; !ok {
			r.first[c.Path] = i
		}
	}
	return r
}

var absentState = &tool.FileState{Exists: false}

// stateFor returns what a restore of the recorded changes would put at path, and whether
// any recorded change covers it. The state is nil when it is unknown (no undo data, or
// data cut by a limit). Like toolfs.RestoreWith, the earliest change among the path and its
// ancestors decides.
func (r *recordedIndex) stateFor(path string) (*tool.FileState, bool) {
	best, bestPath := -1, ""
	for p := path; ; p = filepath.Dir(p) {
		if i, ok := r.first[p]; ok && (best < 0 || i < best) {
			best, bestPath = i, p
		}
		if p == filepath.Dir(p) {
			break
		}
	}
	if best < 0 {
		return nil, false
	}
	st := r.changes[best].Before
	if bestPath == path || st == nil || st.Incomplete != "" {
		return st, true
	}
	rest := strings.TrimPrefix(path, bestPath+string(filepath.Separator))
	for name := range strings.SplitSeq(rest, string(filepath.Separator)) {
		if !st.Exists || !st.IsDir {
			return absentState, true
		}
		var next *tool.FileState
		for i := range st.Entries {
			if st.Entries[i].Name == name {
				next = &st.Entries[i].State
				break
			}
		}
		if next == nil {
			return absentState, true
		}
		st = next
	}
	return st, true
}

// diff turns the differences between each root's start and end into ledger changes,
// placed before the recorded ones, and notes what the turn left at every path of the
// resulting ledger.
// diffResult is what diff found: the ledger, what the turn left, and what it could not tell.
type diffResult struct {
	changes  []tool.Change
	after    []store.UndoState
	warnings []string
}

func (s *Snapshots) diff(ctx context.Context, roots []rootDiff, recorded []tool.Change, now time.Time) (diffResult, error) {
	var res diffResult
	rec := indexRecorded(recorded)
	var found []tool.Change
	for _, r := range roots {
		cs, err := s.diffRoot(ctx, r, rec, now, &res.warnings)
		if err != nil {
			return diffResult{}, err
		}
		found = append(found, cs...)
	}
	res.changes = append(found, recorded...)
	res.after = s.afterStates(roots, res.changes, &res.warnings)
	return res, nil
}

func (s *Snapshots) diffRoot(ctx context.Context, r rootDiff, rec *recordedIndex, now time.Time, warnings *[]string) ([]tool.Change, error) {
	candidates := map[string]bool{}
	for i := range r.begin.entries {
		b := &r.begin.entries[i]
		if a, _ := r.after.lookup(b.rel); a == nil || !sameState(b, a) {
			candidates[b.rel] = true
		}
	}
	for i := range r.after.entries {
		if b, _ := r.begin.lookup(r.after.entries[i].rel); b == nil {
			candidates[r.after.entries[i].rel] = true
		}
	}
	// A path ctx.fs changed may hold what the recorded undo data says only because the turn
	// changed it before (a shell edit, then a ctx.fs write): those are checked too.
	for p := range rec.first {
		if rel, ok := s.scannedRel(r.root, p); ok {
			candidates[rel] = true
		}
	}
	rels := make([]string, 0, len(candidates))
	for rel := range candidates {
		rels = append(rels, rel)
	}
	slices.SortFunc(rels, comparePaths)

	var out []tool.Change
	gone := map[string]bool{} // directories whose whole tree a change already puts back
	for _, rel := range rels {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if underAny(rel, gone) {
			continue
		}
		path := absPath(r.root, rel)
		b, _ := r.begin.lookup(rel)
		a, _ := r.after.lookup(rel)
		// Where a walk could not look (a path it could not examine, a folder it could not
		// list), a difference means nothing: claiming a change there could make a restore
		// remove a file that was there all along.
		if (b != nil && b.unknown) || (a != nil && a.unknown) || belowUnlisted(r.begin, rel) || belowUnlisted(r.after, rel) {
			if _, own := rec.first[path]; !own {
				*warnings = append(*warnings, fmt.Sprintf("%s could not be examined at the turn's start or end: changes to it made other than through ctx.fs are not recorded", path))
			}
			continue
		}
		recState, covered := rec.stateFor(path)
		if covered && s.sameAsBegin(recState, r.begin, rel) {
			// ctx.fs's undo data already puts the turn's start back. A path ctx.fs did not
			// name itself, changed below a folder that still stands (a file a shell made in
			// a folder ctx.fs made), still gets its change: it counts as changed, and its
			// record of what the turn left guards it against changes made outside jean2.
			_, own := rec.first[path]
			changed := (b == nil) != (a == nil) || (b != nil && !sameState(b, a))
			if own || !changed || goneNow(r.after, rel) {
				continue
			}
		}
		if !covered && ((b == nil && a == nil) || (b != nil && a != nil && sameState(b, a))) {
			continue
		}
		out = append(out, tool.Change{
			Path: path, Tool: ToolOutside, Op: opFor(b, a, rec, path), Disk: true, OK: true, At: now,
			Before: s.beforeFromManifest(r.begin, rel),
		})
		if b != nil && b.kind == kindDir && (a == nil || a.kind != kindDir) {
			// The directory's tree (its start) is the change's before-state: what lay below
			// it needs no change of its own.
			gone[rel] = true
		}
	}
	return out, nil
}

func underAny(rel string, dirs map[string]bool) bool {
	if len(dirs) == 0 {
		return false
	}
	if dirs[""] && rel != "" {
		return true
	}
	for i := len(rel) - 1; i > 0; i-- {
		if rel[i] == '/' && dirs[rel[:i]] {
			return true
		}
	}
	return false
}

// scannedRel returns path relative to root when a walk of root records it: inside the root
// and below no skipped name.
func (s *Snapshots) scannedRel(root, path string) (string, bool) {
	if path == root {
		return "", true
	}
	if !strings.HasPrefix(path, root+string(filepath.Separator)) {
		return "", false
	}
	rel := filepath.ToSlash(path[len(root)+1:])
	if rel == "" || filepath.Clean(path) != path {
		return "", false
	}
	for name := range strings.SplitSeq(rel, "/") {
		if s.skip[name] {
			return "", false
		}
	}
	if s.isOwnDir(path) || strings.HasPrefix(path, s.realDir+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

func opFor(b, a *entry, rec *recordedIndex, path string) string {
	made := func(e *entry) string {
		switch e.kind {
		case kindDir:
			return "mkdir"
		case kindSymlink:
			return OpSymlink
		}
		return "write"
	}
	switch {
	case b == nil && a == nil:
		return "rm"
	case b == nil:
		return made(a)
	case a == nil:
		return "rm"
	case b.kind != a.kind:
		return made(a)
	case sameState(b, a):
		// Unchanged over the turn, yet ctx.fs's undo data says otherwise: name what ctx.fs did.
		if i, ok := rec.first[path]; ok && rec.changes[i].Op != "" {
			return rec.changes[i].Op
		}
		return "write"
	case b.kind == kindDir:
		return OpChmod
	case b.kind == kindSymlink:
		return OpSymlink
	case b.kind == kindFile && b.hashed && a.hashed && b.hash == a.hash:
		return OpChmod
	}
	return "write"
}

// sameAsBegin reports whether st (a recorded before-state) is exactly the path's state at
// the turn's start. Entries below skipped names are left out of the comparison: a snapshot
// never saw them, and ctx.fs's data is the only record of them.
func (s *Snapshots) sameAsBegin(st *tool.FileState, begin *manifest, rel string) bool {
	if st == nil || st.Incomplete != "" {
		return false
	}
	b, i := begin.lookup(rel)
	if !st.Exists {
		return b == nil
	}
	if b == nil || st.Mode != b.key.mode {
		return false
	}
	switch b.kind {
	case kindFile:
		return st.Mode.IsRegular() && b.hashed && int64(len(st.Content)) == b.key.size && sha256.Sum256(st.Content) == b.hash
	case kindSymlink:
		return string(st.Content) == b.target
	case kindDir:
		if !st.IsDir || b.note != "" {
			return false
		}
		children := 0
		sub := begin.subtree(i)
		for j := 0; j < len(sub); j++ {
			if !strings.Contains(sub[j].rel[len(rel)+boolInt(rel != ""):], "/") {
				children++
			}
		}
		seen := 0
		for k := range st.Entries {
			e := &st.Entries[k]
			if s.skip[e.Name] {
				continue
			}
			seen++
			child := e.Name
			if rel != "" {
				child = rel + "/" + e.Name
			}
			if !s.sameAsBegin(&e.State, begin, child) {
				return false
			}
		}
		return seen == children
	}
	return false
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// beforeFromManifest builds the before-state of a change from the turn's start: absent, a
// file with its content from the store, a link, or a whole directory tree. What cannot be
// put back exactly (a file not copied, a tree past MaxTreeBytes, a named pipe) gives a state
// marked Incomplete, which names the path and the reason; a restore refuses it.
func (s *Snapshots) beforeFromManifest(m *manifest, rel string) *tool.FileState {
	e, i := m.lookup(rel)
	if e == nil {
		return &tool.FileState{Exists: false}
	}
	budget := s.opts.MaxTreeBytes
	st, problem := s.stateOf(m, i, absPath(m.root, rel), &budget)
	if problem != "" {
		return &tool.FileState{Exists: true, IsDir: e.kind == kindDir, Mode: e.key.mode, Incomplete: problem}
	}
	return &st
}

// stateOf builds the state of entry i; top is the path of the change, for messages.
func (s *Snapshots) stateOf(m *manifest, i int, top string, budget *int64) (tool.FileState, string) {
	e := &m.entries[i]
	path := absPath(m.root, e.rel)
	st := tool.FileState{Exists: true, Mode: e.key.mode}
	*budget -= entryOverhead + int64(len(e.rel))
	switch e.kind {
	case kindFile:
		if !e.hashed {
			return st, fmt.Sprintf("%s was not copied when the turn began: %s", path, e.note)
		}
		if *budget -= e.key.size; *budget < 0 {
			return st, fmt.Sprintf("the undo data for %s is larger than the %d-byte limit for one change", top, s.opts.MaxTreeBytes)
		}
		data, err := s.blobs.get(e.hash)
		if err != nil {
			return st, fmt.Sprintf("%s cannot be put back: %v", path, err)
		}
		st.Content = data
	case kindSymlink:
		st.Content = []byte(e.target)
	case kindDir:
		st.IsDir = true
		if e.note != "" {
			return st, fmt.Sprintf("%s %s when the turn began", path, e.note)
		}
		if e.skipped {
			return st, fmt.Sprintf("%s holds entries snapshots do not copy (%s), so its tree cannot be put back whole", path, strings.Join(s.opts.Skip, ", "))
		}
		sub := m.subtree(i)
		for j := 0; j < len(sub); {
			k := i + 1 + j
			child, problem := s.stateOf(m, k, top, budget)
			if problem != "" {
				return st, problem
			}
			name := m.entries[k].rel
			name = name[strings.LastIndexByte(name, '/')+1:]
			st.Entries = append(st.Entries, tool.DirState{Name: name, State: child})
			j += 1 + len(m.subtree(k))
		}
	default:
		return st, fmt.Sprintf("%s was a %s when the turn began, which cannot be recreated", path, describe(e.key.mode))
	}
	return st, ""
}

// afterStates notes what stands now at every path of changes that reached the disk: from
// the end-of-turn walk for paths it covers, else by looking at the path.
// A path that cannot be examined gets no record; a restore then has nothing to compare it
// with and falls back on the rules for paths no turn touched, which can only make it
// stricter.
func (s *Snapshots) afterStates(roots []rootDiff, changes []tool.Change, warnings *[]string) []store.UndoState {
	seen := map[string]bool{}
	var out []store.UndoState
	for _, c := range changes {
		if !c.Disk || seen[c.Path] || !filepath.IsAbs(c.Path) || filepath.Clean(c.Path) != c.Path {
			continue
		}
		seen[c.Path] = true
		st, ok := s.fromWalk(roots, c.Path)
		if !ok {
			var err error
			if st, err = s.stateNow(c.Path); err != nil {
				*warnings = append(*warnings, fmt.Sprintf("%s could not be examined at the turn's end (%v): a restore cannot tell whether it was changed outside jean2 since", c.Path, err))
				continue
			}
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b store.UndoState) int { return comparePaths(a.Path, b.Path) })
	return out
}

func (s *Snapshots) fromWalk(roots []rootDiff, path string) (store.UndoState, bool) {
	for _, r := range roots {
		rel, ok := s.scannedRel(r.root, path)
		if !ok {
			continue
		}
		a, _ := r.after.lookup(rel)
		switch {
		case a == nil && belowUnlisted(r.after, rel):
			// Below a folder the walk could not list nothing is known: look at the path.
			return store.UndoState{}, false
		case a == nil:
			return store.UndoState{Path: path}, true
		case a.unknown:
			return store.UndoState{}, false
		}
		return undoStateOf(path, a), true
	}
	return store.UndoState{}, false
}

// belowUnlisted reports whether rel lies below a folder the walk recorded but could not
// list. Only the nearest recorded ancestor matters: a walk records nothing below a folder
// it could not list.
func belowUnlisted(m *manifest, rel string) bool {
	for i := len(rel) - 1; i >= 0; i-- {
		if i == 0 || rel[i] == '/' {
			dir := rel[:i]
			if e, _ := m.lookup(dir); e != nil {
				return e.kind == kindDir && e.note != ""
			}
		}
	}
	return false
}

func undoStateOf(path string, e *entry) store.UndoState {
	st := store.UndoState{Path: path, Exists: true, Kind: e.kind.String(), Mode: e.key.mode}
	switch e.kind {
	case kindFile:
		st.Size = e.key.size
		if e.hashed {
			st.Hash = e.hash[:]
		} else {
			st.ModTime = e.key.mtime
		}
	case kindSymlink:
		st.Target = e.target
	case kindOther:
		st.Size, st.ModTime = e.key.size, e.key.mtime
	}
	return st
}

// stateNow looks at path as it stands, without following a final symlink: its kind, mode,
// and a file's content hash (size and time stand in for a file past MaxFileSize).
func (s *Snapshots) stateNow(path string) (store.UndoState, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return store.UndoState{Path: path}, nil
		}
		return store.UndoState{}, err
	}
	e := entry{key: keyOf(&st)}
	e.kind = kindOfMode(e.key.mode)
	switch e.kind {
	case kindSymlink:
		target, err := os.Readlink(path)
		if err != nil {
			return store.UndoState{}, err
		}
		e.target = target
	case kindFile:
		// A file that cannot be read (no permission, grew past the limit meanwhile) is
		// described by its size and time instead, as a file too large to read is.
		if e.key.size <= s.opts.MaxFileSize {
			if sum, err := hashFile(path, s.opts.MaxFileSize); err == nil {
				e.hash, e.hashed = sum, true
			}
		}
	}
	return undoStateOf(path, &e), nil
}

// hashFile hashes a regular file without following a final symlink.
func hashFile(path string, limit int64) (digest, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return digest{}, err
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, limit+1))
	if err != nil {
		return digest{}, err
	}
	if n > limit {
		return digest{}, fmt.Errorf("it grew past %d bytes while it was read", limit)
	}
	var d digest
	h.Sum(d[:0])
	return d, nil
}

// goneNow reports whether rel's parent folder no longer stands at the turn's end: what lay
// below it went with it, and its own change says so.
func goneNow(after *manifest, rel string) bool {
	i := strings.LastIndexByte(rel, '/')
	if rel == "" {
		return false
	}
	parent := ""
	if i >= 0 {
		parent = rel[:i]
	}
	a, _ := after.lookup(parent)
	return a == nil || a.kind != kindDir
}

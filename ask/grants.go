package ask

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/tool"
)

// Access levels of a grant: a write grant also covers reading.
const (
	AccessRead  = "read"
	AccessWrite = "write"
)

// Grant is one remembered permission.
type Grant struct {
	ID          string    `json:"id"`
	Tool        string    `json:"tool"`
	ToolVersion string    `json:"toolVersion"`
	Resource    string    `json:"resource,omitempty"`
	Question    string    `json:"question"`
	Paths       []string  `json:"paths,omitempty"` // absolute, as resolved for the asking call
	Patterns    []string  `json:"patterns,omitempty"`
	Access      string    `json:"access"` // read or write, see accessOf
	Risk        string    `json:"risk,omitempty"`
	Duration    string    `json:"duration"` // once, session or workspace
	CallID      string    `json:"callId"`
	SessionID   string    `json:"sessionId,omitempty"`
	WorkspaceID string    `json:"workspaceId,omitempty"` // Call.WorkspaceID, or "path:<workspace>"
	GrantedAt   time.Time `json:"grantedAt"`
	// OutsideReads marks a granted permission that names no path (see OpensReads): it opens
	// reading, not writing, of any path the host's rules leave closed only for want of a
	// grant, within the call that got it (see Covers).
	OutsideReads bool `json:"outsideReads,omitempty"`
}

// OpensReads reports whether a permission ask, once granted, opens reads without naming
// paths: a file permission with no paths and no patterns, or (as jean2's catalogue grep,
// glob and others ask before searching outside the workspace) a permission with no paths or
// patterns whose metadata says permissionKey "path:outside_workspace". Such an ask is
// person-only (Assess): its grant covers every readable file.
func OpensReads(a tool.Ask) bool {
	if a.Type != tool.AskPermission || len(a.Paths) > 0 || len(a.Patterns) > 0 {
		return false
	}
	if a.Resource == "file" {
		return true
	}
	if a.Resource != "" || len(a.Metadata) == 0 {
		return false
	}
	var md struct {
		PermissionKey string `json:"permissionKey"`
	}
	return json.Unmarshal(a.Metadata, &md) == nil && md.PermissionKey == "path:outside_workspace"
}

// Store persists grants that outlive a call (session and workspace ones), so a restarted
// server keeps them. Grants keeps its own in-memory copy and asks the store only when a grant
// is added or revoked, so lookups on the file-access path never wait on a database.
type Store interface {
	LoadGrants(ctx context.Context) ([]Grant, error)
	SaveGrant(ctx context.Context, g Grant) error
	DeleteGrant(ctx context.Context, id string) error
}

// GrantsOptions configures Grants; nil means in memory only.
type GrantsOptions struct {
	Store  Store        // optional persistence
	Logger *slog.Logger // where store failures are reported when a caller cannot be told
	// Shared says other processes write grants to Store too (several instances sharing one
	// database): a permission ask that no grant held here covers is looked up among the
	// store's grants before anyone is asked, so a grant given on another instance a moment
	// ago is used at once. File access (Covers) never waits on the store: it sees such a
	// grant once Adopt took it up.
	Shared bool
}

// ErrUnknownGrant is returned by Revoke for an id no grant has.
var ErrUnknownGrant = errors.New("no grant has this id")

// Grants remembers granted permissions and answers whether one already covers an ask or a
// file access. Safe for concurrent use.
type Grants struct {
	store  Store
	shared bool
	logger *slog.Logger

	mu     sync.RWMutex
	byTool map[string][]*entry // tool name → its grants, oldest first
	// refused holds, per session, the sensitive files a person refused (refusals.go).
	refused map[string][]string
	// gone holds the ids of stored grants revoked or ended here or elsewhere (Forget), so
	// that an Adopt that read the store just before their deletion does not bring them back.
	gone map[string]bool
}

// entry is a grant with what matching needs precomputed.
type entry struct {
	Grant
	covered []string // the absolute paths the grant names: Paths and "file:/abs" patterns
	real    []string // covered with symlinks resolved, for paths reached through a link
}

// NewGrants returns empty grants that save to opts.Store, if any; Load reads back what the
// store kept. A nil opts keeps grants in memory only.
func NewGrants(opts *GrantsOptions) *Grants {
	g := &Grants{byTool: map[string][]*entry{}, gone: map[string]bool{}}
	if opts != nil {
		g.store, g.logger, g.shared = opts.Store, opts.Logger, opts.Shared && opts.Store != nil
	}
	if g.logger == nil {
		g.logger = slog.New(slog.DiscardHandler)
	}
	return g
}

// Load adds the grants kept by the store (session and workspace ones; a once grant never
// outlives its call). Without a store it does nothing.
func (g *Grants) Load(ctx context.Context) error {
	if g.store == nil {
		return nil
	}
	loaded, err := g.store.LoadGrants(ctx)
	if err != nil {
		return fmt.Errorf("load grants: %w", err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, gr := range loaded {
		if gr.Duration == tool.DurationOnce || gr.ID == "" || gr.Tool == "" {
			continue
		}
		g.byTool[gr.Tool] = append(g.byTool[gr.Tool], newEntry(gr))
	}
	return nil
}

func newEntry(gr Grant) *entry {
	e := &entry{Grant: gr}
	e.covered = append(e.covered, gr.Paths...)
	for _, p := range gr.Patterns {
		if fp, ok := strings.CutPrefix(p, "file:"); ok && filepath.IsAbs(fp) {
			e.covered = append(e.covered, filepath.Clean(fp))
		}
	}
	for _, p := range e.covered {
		if r := policy.Real(p); r != p {
			e.real = append(e.real, r)
		}
	}
	return e
}

// Record remembers that call was granted a for duration and returns the grant. A once grant
// lives only in memory and only for that call; longer ones are saved to the store too. A
// store failure is returned, but the grant holds in memory all the same.
func (g *Grants) Record(ctx context.Context, call Call, a tool.Ask, duration string) (Grant, error) {
	switch duration {
	case tool.DurationOnce, tool.DurationSession, tool.DurationWorkspace:
	default:
		return Grant{}, fmt.Errorf("record grant: duration %q is not one of once, session, workspace", duration)
	}
	if a.Type != tool.AskPermission {
		return Grant{}, fmt.Errorf("record grant: %q ask is not a permission", a.Type)
	}
	gr := Grant{
		ID:           newID("g_"),
		Tool:         call.Tool,
		ToolVersion:  call.ToolVersion,
		Resource:     a.Resource,
		Question:     a.Question,
		Paths:        resolvePaths(call, a.Paths),
		Patterns:     slices.Clone(a.Patterns),
		Access:       accessOf(a),
		Risk:         a.Risk,
		Duration:     duration,
		CallID:       call.CallID,
		SessionID:    call.SessionID,
		WorkspaceID:  call.workspaceKey(),
		GrantedAt:    time.Now().UTC(),
		OutsideReads: OpensReads(a),
	}
	e := newEntry(gr)
	g.mu.Lock()
	g.byTool[gr.Tool] = append(g.byTool[gr.Tool], e)
	if duration != tool.DurationOnce {
		g.unrefuse(call.SessionID, e) // a lasting yes to a refused file lifts the refusal
	}
	g.mu.Unlock()
	if duration != tool.DurationOnce && g.store != nil {
		if err := g.store.SaveGrant(ctx, gr); err != nil {
			return gr, fmt.Errorf("save grant %s for tool %s: %w", gr.ID, gr.Tool, err)
		}
	}
	return gr, nil
}

// Lookup reports whether a permission ask of call is already covered, and by which grants.
// A grant counts when it is for the same tool and the same tool version (a changed tool asks
// again), the same resource, at least the ask's risk and access (a read grant does not cover
// a write), and its duration reaches this call: once → only the call that got it, session →
// the same session, workspace → the same workspace.
//
// Then every path the ask names (its paths and its "file:/abs" patterns) must be covered by
// such a grant, a directory covering what lies below it by whole path elements. The ask's
// other patterns are markers that qualify those paths ("sensitive-file", or a tool's own),
// so the grant that covers a path must name each of them too; the patterns that only restate
// the paths ("file:<base name>", "outside-workspace", as createFilePermissionAsk adds) need
// no separate grant. An ask with markers and no paths needs each marker named by a grant,
// and an ask that names nothing is covered by a grant that named nothing for the same
// question.
func (g *Grants) Lookup(call Call, a tool.Ask) ([]Grant, bool) {
	if a.Type != tool.AskPermission {
		return nil, false
	}
	access, risk := accessOf(a), rank(a.Risk)
	g.mu.RLock()
	var active []*entry
	for _, e := range g.byTool[call.Tool] {
		if e.ToolVersion == call.ToolVersion && e.Resource == a.Resource && e.reaches(call) &&
			rank(e.Risk) >= risk && accessCovers(e.Access, access) {
			active = append(active, e)
		}
	}
	g.mu.RUnlock()
	if len(active) == 0 {
		return nil, false
	}
	used := map[*entry]bool{}
	mark := func(ok func(*entry) bool) bool {
		for _, e := range active {
			if ok(e) {
				used[e] = true
				return true
			}
		}
		return false
	}
	paths := resolvePaths(call, a.Paths)
	if len(paths) == 0 && len(a.Patterns) == 0 {
		if !mark(func(e *entry) bool { return len(e.Paths) == 0 && len(e.Patterns) == 0 && e.Question == a.Question }) {
			return nil, false
		}
	}
	// "file:/abs" patterns name paths; the rest are markers, except the ones that only
	// restate the ask's paths (see pathMarkers).
	var markers []string
	restated := pathMarkers(paths)
	for _, pat := range a.Patterns {
		if fp, ok := strings.CutPrefix(pat, "file:"); ok && filepath.IsAbs(fp) {
			paths = append(paths, filepath.Clean(fp))
		} else if !restated[pat] {
			markers = append(markers, pat)
		}
	}
	namesMarkers := func(e *entry) bool {
		for _, m := range markers {
			if !slices.Contains(e.Patterns, m) {
				return false
			}
		}
		return true
	}
	slices.Sort(paths)
	for _, p := range slices.Compact(paths) {
		e := findCovering(active, p, namesMarkers)
		if e == nil {
			return nil, false
		}
		used[e] = true
	}
	if len(paths) == 0 {
		for _, m := range markers {
			if !mark(func(e *entry) bool { return slices.Contains(e.Patterns, m) }) {
				return nil, false
			}
		}
	}
	out := make([]Grant, 0, len(used))
	for _, e := range active {
		if used[e] {
			out = append(out, e.Grant)
		}
	}
	return out, true
}

// Covers reports whether call's granted permissions cover access to the file at path
// (absolute; a relative path is taken against the call's workspace), for writing when write
// is set. A grant covers its paths and everything below a directory path, compared by whole
// path elements (/a/proj covers /a/proj/x, not /a/proj-x), and covers the path as written or
// as reached through symlinks. Grants that are not for files, for another tool version, or
// that do not reach this call cover nothing.
//
// One rule keeps asks without paths useful: a granted permission that names no paths (see
// OpensReads: the guide's word-count tool asks "Read file outside workspace: …?", jean2's
// catalogue grep "Searching in files outside the workspace requires approval.") covers
// reading, never writing, for the rest of the call that got it, never beyond, whatever
// duration the person chose (its duration lets later calls that ask the same question be
// answered without asking the person: Lookup, and the Broker grants those calls the same),
// except a sensitive path or a protected one (Call.Protected), as written or where it leads:
// those need a grant that names them. Blocked paths are closed before grants are consulted
// (toolfs).
func (g *Grants) Covers(call Call, path string, write bool) bool {
	need := AccessRead
	if write {
		need = AccessWrite
	}
	p := policy.Resolve(path, call.Workspace, call.Home)
	g.mu.RLock()
	found, named := g.scanCovers(call, need, p, "")
	g.mu.RUnlock()
	if found || !named {
		return found
	}
	// Only when no grant covers the path as written is it resolved through symlinks; that
	// touches the disk, so it happens outside the lock.
	rp := policy.Real(p)
	g.mu.RLock()
	defer g.mu.RUnlock()
	found, _ = g.scanCovers(call, need, p, rp)
	return found
}

// scanCovers looks for a grant of call that covers p (or, when rp is set, p's real location
// rp); named reports whether any usable grant names paths at all. g.mu must be held.
func (g *Grants) scanCovers(call Call, need, p, rp string) (found, named bool) {
	for _, e := range g.byTool[call.Tool] {
		if e.ToolVersion != call.ToolVersion || !accessCovers(e.Access, need) || !e.reaches(call) {
			continue
		}
		if e.OutsideReads {
			if need == AccessRead && e.CallID == call.CallID && opensTo(call, p) && (rp == "" || opensTo(call, rp)) {
				return true, true
			}
			continue
		}
		switch e.Resource {
		case "file":
		case "":
			// A permission that names paths without saying the resource is about them.
		default:
			continue
		}
		if len(e.covered) == 0 {
			continue
		}
		named = true
		if rp == "" && e.coversLiteral(p) || rp != "" && e.coversReal(rp) {
			return true, true
		}
	}
	return false, named
}

// opensTo reports whether a grant that names no path may open p: not a sensitive path, not
// one in or holding a protected place.
func opensTo(call Call, p string) bool {
	return !policy.IsSensitive(p) && !protectedPath(call.Protected, p, p)
}

// reaches reports whether the grant's duration reaches call. Every grant reaches the call
// that got it, even a call with no session or workspace.
func (e *entry) reaches(call Call) bool {
	if e.CallID == call.CallID {
		return true
	}
	switch e.Duration {
	case tool.DurationSession:
		return e.SessionID != "" && e.SessionID == call.SessionID
	case tool.DurationWorkspace:
		return e.WorkspaceID != "" && e.WorkspaceID == call.workspaceKey()
	}
	return false
}

// findCovering returns the first of es (that ok accepts) whose paths cover p as written or,
// failing that, where p really leads; nil when none does. The real location is resolved
// only when no grant covers p as written, since that costs system calls.
func findCovering(es []*entry, p string, ok func(*entry) bool) *entry {
	named := false
	for _, e := range es {
		if !ok(e) || len(e.covered) == 0 {
			continue
		}
		named = true
		if e.coversLiteral(p) {
			return e
		}
	}
	if !named {
		return nil
	}
	rp := policy.Real(p)
	for _, e := range es {
		if ok(e) && e.coversReal(rp) {
			return e
		}
	}
	return nil
}

// coversLiteral reports whether p lies within a path the grant names, as written.
func (e *entry) coversLiteral(p string) bool {
	for _, c := range e.covered {
		if policy.Within(p, c) {
			return true
		}
	}
	return false
}

// coversReal reports whether the real location rp lies within a path the grant names, as
// written or as resolved when granted.
func (e *entry) coversReal(rp string) bool {
	if e.coversLiteral(rp) {
		return true
	}
	for _, c := range e.real {
		if policy.Within(rp, c) {
			return true
		}
	}
	return false
}

// List returns every remembered grant, oldest first.
func (g *Grants) List() []Grant {
	g.mu.RLock()
	var out []Grant
	for _, es := range g.byTool {
		for _, e := range es {
			out = append(out, e.Grant)
		}
	}
	g.mu.RUnlock()
	slices.SortFunc(out, func(a, b Grant) int {
		if c := a.GrantedAt.Compare(b.GrantedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// Revoke forgets the grant with id, so its permission is asked again.
func (g *Grants) Revoke(ctx context.Context, id string) error {
	removed := g.remove(func(e *entry) bool { return e.ID == id })
	if len(removed) == 0 {
		return fmt.Errorf("revoke grant %q: %w", id, ErrUnknownGrant)
	}
	return g.deleteStored(ctx, removed)
}

// Adopt takes up the store's grants this instance does not hold (given through another
// instance sharing the store) and returns how many. Grants revoked or forgotten here are
// never brought back, even when the store still had them as it was read.
func (g *Grants) Adopt(ctx context.Context) (int, error) {
	if g.store == nil {
		return 0, nil
	}
	stored, err := g.store.LoadGrants(ctx)
	if err != nil {
		return 0, fmt.Errorf("read the stored grants: %w", err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	held := map[string]bool{}
	for _, es := range g.byTool {
		for _, e := range es {
			held[e.ID] = true
		}
	}
	n := 0
	for _, gr := range stored {
		if gr.Duration == tool.DurationOnce || gr.ID == "" || gr.Tool == "" || held[gr.ID] || g.gone[gr.ID] {
			continue
		}
		g.byTool[gr.Tool] = append(g.byTool[gr.Tool], newEntry(gr))
		held[gr.ID] = true
		n++
	}
	return n, nil
}

// Forget drops the grant with id from memory, leaving the store alone: another instance
// revoked it and deleted it there. An id never held is remembered all the same, so that a
// concurrent Adopt does not take the grant up from a read made before the deletion.
func (g *Grants) Forget(id string) bool {
	removed := g.remove(func(e *entry) bool { return e.ID == id })
	g.mu.Lock()
	g.gone[id] = true
	g.mu.Unlock()
	return len(removed) > 0
}

// EndCall forgets the once grants of a finished call.
func (g *Grants) EndCall(callID string) {
	g.remove(func(e *entry) bool { return e.Duration == tool.DurationOnce && e.CallID == callID })
}

// EndSession forgets every grant given in a session that is over, workspace ones excepted.
func (g *Grants) EndSession(ctx context.Context, sessionID string) error {
	if sessionID == "" {
		return nil
	}
	g.mu.Lock()
	delete(g.refused, sessionID)
	g.mu.Unlock()
	removed := g.remove(func(e *entry) bool { return e.Duration != tool.DurationWorkspace && e.SessionID == sessionID })
	return g.deleteStored(ctx, removed)
}

func (g *Grants) remove(match func(*entry) bool) []Grant {
	var removed []Grant
	g.mu.Lock()
	defer g.mu.Unlock()
	for name, es := range g.byTool {
		kept := es[:0:0]
		for _, e := range es {
			if match(e) {
				removed = append(removed, e.Grant)
				if e.Duration != tool.DurationOnce {
					g.gone[e.ID] = true
				}
			} else {
				kept = append(kept, e)
			}
		}
		if len(kept) == 0 {
			delete(g.byTool, name)
		} else if len(kept) != len(es) {
			g.byTool[name] = kept
		}
	}
	return removed
}

func (g *Grants) deleteStored(ctx context.Context, removed []Grant) error {
	if g.store == nil {
		return nil
	}
	var errs []error
	for _, gr := range removed {
		if gr.Duration == tool.DurationOnce {
			continue
		}
		if err := g.store.DeleteGrant(ctx, gr.ID); err != nil {
			errs = append(errs, fmt.Errorf("delete stored grant %s: %w", gr.ID, err))
		}
	}
	return errors.Join(errs...)
}

// resolvePaths makes an ask's paths absolute the way ctx.resolvePath does for the call.
// Without a workspace, a relative path stays relative and so matches no absolute path.
func resolvePaths(call Call, paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if p == "" {
			continue
		}
		if call.Workspace == "" && !filepath.IsAbs(p) && p != "~" && !strings.HasPrefix(p, "~/") {
			out = append(out, filepath.Clean(p))
			continue
		}
		out = append(out, policy.Resolve(p, call.Workspace, call.Home))
	}
	return out
}

// pathMarkers are the patterns that say nothing beyond the paths themselves: the base name
// of each and the outside-workspace flag (whether a path is outside the workspace is a fact
// about the path, judged when it was granted).
func pathMarkers(paths []string) map[string]bool {
	m := map[string]bool{"outside-workspace": len(paths) > 0}
	for _, p := range paths {
		m["file:"+filepath.Base(p)] = true
	}
	return m
}

func accessCovers(have, need string) bool { return have == AccessWrite || need == AccessRead }

// writeWords mark a permission as one to change files. Anything else is taken as reading,
// so a grant never covers writing unless the ask said it was about writing.
var writeWords = map[string]bool{
	"write": true, "writes": true, "writing": true, "overwrite": true, "overwriting": true,
	"edit": true, "edits": true, "editing": true, "modify": true, "modifying": true,
	"delete": true, "deleting": true, "remove": true, "removing": true, "rm": true,
	"create": true, "creating": true, "save": true, "saving": true, "rename": true,
	"renaming": true, "move": true, "moving": true, "append": true, "appending": true,
	"mkdir": true, "update": true, "updating": true, "replace": true, "replacing": true,
	"patch": true, "patching": true, "truncate": true, "truncating": true,
}

// accessOf says whether a permission ask is about reading or writing. An explicit
// metadata {"access":"read|write"} or {"operation":"…"} wins; otherwise the question's own
// words decide (createFilePermissionAsk says "Reading", "Writing" or "Editing"), leaving out
// quoted text and anything that looks like a path or file name, so a file called
// "write-notes.txt" does not make a read ask a write one.
func accessOf(a tool.Ask) string {
	var md struct {
		Access    string `json:"access"`
		Operation string `json:"operation"`
	}
	if len(a.Metadata) > 0 && json.Unmarshal(a.Metadata, &md) == nil {
		switch strings.ToLower(md.Access) {
		case AccessWrite:
			return AccessWrite
		case AccessRead:
			return AccessRead
		}
		if md.Operation != "" {
			if writeWords[strings.ToLower(md.Operation)] {
				return AccessWrite
			}
			return AccessRead
		}
	}
	for _, w := range questionWords(a.Question) {
		if writeWords[w] {
			return AccessWrite
		}
	}
	return AccessRead
}

// questionWords returns the lower-cased plain words of a question, without quoted parts or
// path-like tokens.
func questionWords(q string) []string {
	var b strings.Builder
	var closing rune
	for _, r := range q {
		switch {
		case closing != 0:
			if r == closing {
				closing = 0
			}
		case r == '"' || r == '`':
			closing = r
		case r == '“':
			closing = '”'
		case r == '‘':
			closing = '’'
		default:
			b.WriteRune(r)
		}
	}
	var words []string
	for _, tok := range strings.Fields(b.String()) {
		if strings.ContainsAny(tok, `/\~`) {
			continue
		}
		tok = strings.TrimFunc(tok, func(r rune) bool { return !unicode.IsLetter(r) })
		if tok == "" || strings.ContainsFunc(tok, func(r rune) bool { return !unicode.IsLetter(r) && r != '-' && r != '\'' }) {
			continue // e.g. notes.txt
		}
		words = append(words, strings.ToLower(tok))
	}
	return words
}

func newID(prefix string) string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

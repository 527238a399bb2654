package builtin

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/jean2/jean2/internal/linediff"
	"github.com/jean2/jean2/tool"
)

// apply-patch takes a V4A-style context patch ("*** Begin Patch" … "*** End Patch") that
// adds, updates, deletes and moves files. Everything is parsed, checked, asked for and
// computed before the first write; a write that fails midway is rolled back from a
// journal of what each file held.

const (
	patchBegin  = "*** Begin Patch"
	patchEnd    = "*** End Patch"
	patchUpdate = "*** Update File: "
	patchAdd    = "*** Add File: "
	patchDelete = "*** Delete File: "
	patchMove   = "*** Move to: "
	patchEOF    = "*** End of File"
)

type patchChunk struct {
	context   *string
	oldLines  []string
	newLines  []string
	endOfFile bool
}

type patchOp struct {
	kind     string // add, update, delete
	path     string
	moveTo   string
	chunks   []*patchChunk
	addLines []string
	line     int
}

type patchFailure struct {
	Code           string   `json:"code"`
	Line           int      `json:"line,omitempty"`
	Path           string   `json:"path,omitempty"`
	ChunkIndex     *int     `json:"chunkIndex,omitempty"`
	CandidateLines []int    `json:"candidateLines,omitempty"`
	Message        string   `json:"message,omitempty"`
	RollbackErrors []string `json:"rollbackErrors,omitempty"`
}

type patchParseError struct {
	line int
	msg  string
}

var unifiedHunk = regexp.MustCompile(`^@@\s+-\d`)

// patchParser holds what parsing has built so far: the operations, the paths already
// claimed, and the operation and chunk that body lines belong to.
type patchParser struct {
	ops   []*patchOp
	seen  map[string]bool
	cur   *patchOp
	chunk *patchChunk
}

func patchErrorf(n int, format string, args ...any) *patchParseError {
	return &patchParseError{n, fmt.Sprintf(format, args...)}
}

func parsePatch(patch string) ([]*patchOp, *patchParseError) {
	lines := regexp.MustCompile(`\r?\n`).Split(patch, -1)
	i := 0
	for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
		i++
	}
	if i >= len(lines) || lines[i] != patchBegin {
		return nil, &patchParseError{0, "Patch must begin with *** Begin Patch."}
	}
	p := &patchParser{seen: map[string]bool{}}
	for i++; i < len(lines); i++ {
		if lines[i] == patchEnd {
			return p.ops, trailingContent(lines, i+1)
		}
		if err := p.line(lines[i], i+1); err != nil {
			return nil, err
		}
	}
	return nil, &patchParseError{0, "Patch must end with *** End Patch."}
}

// trailingContent refuses anything but blank lines after *** End Patch, from line index i.
func trailingContent(lines []string, i int) *patchParseError {
	for j := i; j < len(lines); j++ {
		if strings.TrimSpace(lines[j]) != "" {
			return patchErrorf(j+1, "Unexpected content after *** End Patch.")
		}
	}
	return nil
}

// line takes one line between the begin and end markers: a "*** " marker or a body line.
func (p *patchParser) line(line string, n int) *patchParseError {
	switch {
	case line == patchBegin:
		return patchErrorf(n, "Unexpected *** Begin Patch marker.")
	case line == patchEOF:
		if p.chunk == nil {
			return patchErrorf(n, "*** End of File appeared outside a chunk.")
		}
		p.chunk.endOfFile = true
		p.chunk = nil
		return nil
	case strings.HasPrefix(line, patchUpdate), strings.HasPrefix(line, patchAdd), strings.HasPrefix(line, patchDelete):
		return p.fileHeader(line, n)
	case strings.HasPrefix(line, patchMove):
		return p.moveTo(line, n)
	case strings.HasPrefix(line, "*** "):
		return patchErrorf(n, "Unknown patch marker: %s", line)
	}
	return p.body(line, n)
}

// claim refuses a second operation on a path, a move's destination included.
func (p *patchParser) claim(path string, n int) *patchParseError {
	if p.seen[path] {
		return patchErrorf(n, "Duplicate operation on path: %s", path)
	}
	p.seen[path] = true
	return nil
}

// fileHeader starts an add, update or delete operation.
func (p *patchParser) fileHeader(line string, n int) *patchParseError {
	kind, marker := "update", patchUpdate
	if strings.HasPrefix(line, patchAdd) {
		kind, marker = "add", patchAdd
	} else if strings.HasPrefix(line, patchDelete) {
		kind, marker = "delete", patchDelete
	}
	path := line[len(marker):]
	if path == "" {
		return patchErrorf(n, "Missing path after %q.", strings.TrimSpace(marker))
	}
	if err := p.claim(path, n); err != nil {
		return err
	}
	p.cur = &patchOp{kind: kind, path: path, line: n}
	p.ops = append(p.ops, p.cur)
	p.chunk = nil
	return nil
}

// moveTo gives the current update a destination; it must come before the first chunk.
func (p *patchParser) moveTo(line string, n int) *patchParseError {
	if p.cur == nil || p.cur.kind != "update" || len(p.cur.chunks) > 0 || p.cur.moveTo != "" {
		return patchErrorf(n, "*** Move to must immediately follow an Update File header.")
	}
	path := line[len(patchMove):]
	if path == "" {
		return patchErrorf(n, "Missing path after \"*** Move to:\".")
	}
	if err := p.claim(path, n); err != nil {
		return err
	}
	p.cur.moveTo = path
	return nil
}

// body takes a line that is not a marker; what it may be depends on the operation it is in.
// Blank lines are tolerated wherever a body line would be refused.
func (p *patchParser) body(line string, n int) *patchParseError {
	blank := strings.TrimSpace(line) == ""
	switch {
	case p.cur == nil:
		if !blank {
			return patchErrorf(n, "Unexpected line outside a file operation: %s", line)
		}
	case p.cur.kind == "add":
		if strings.HasPrefix(line, "+") {
			p.cur.addLines = append(p.cur.addLines, line[1:])
		} else if !blank {
			return patchErrorf(n, "An Add File operation may only contain \"+\" lines.")
		}
	case p.cur.kind == "delete":
		if !blank {
			return patchErrorf(n, "A Delete File operation must not contain body lines.")
		}
	case strings.HasPrefix(line, "@@"):
		return p.chunkHeader(line, n)
	case p.chunk == nil:
		if !blank {
			return patchErrorf(n, "An Update chunk must start with \"@@\" before body lines.")
		}
	default:
		return p.chunkLine(line, n)
	}
	return nil
}

// chunkHeader starts a chunk: "@@" alone, or "@@ <context>" to anchor it after a line.
func (p *patchParser) chunkHeader(line string, n int) *patchParseError {
	c := &patchChunk{}
	switch {
	case line == "@@":
	case unifiedHunk.MatchString(line):
		return patchErrorf(n, "Unified diff hunk headers are not supported.")
	case strings.HasPrefix(line, "@@ "):
		if cx := line[3:]; cx != "" {
			c.context = &cx
		}
	default:
		return patchErrorf(n, "Malformed chunk header: %s", line)
	}
	p.chunk = c
	p.cur.chunks = append(p.cur.chunks, c)
	return nil
}

// chunkLine adds a context, added or removed line to the current chunk.
func (p *patchParser) chunkLine(line string, n int) *patchParseError {
	switch {
	case strings.HasPrefix(line, " "):
		p.chunk.oldLines = append(p.chunk.oldLines, line[1:])
		p.chunk.newLines = append(p.chunk.newLines, line[1:])
	case strings.HasPrefix(line, "+"):
		p.chunk.newLines = append(p.chunk.newLines, line[1:])
	case strings.HasPrefix(line, "-"):
		p.chunk.oldLines = append(p.chunk.oldLines, line[1:])
	default:
		return patchErrorf(n, "Malformed chunk line (must start with \" \", \"+\", or \"-\"): %s", line)
	}
	return nil
}

// replacement is one chunk's change: content[start:end] becomes text.
type replacement struct {
	start, end int
	text       string
	mode       string
	line       int
	chunk      int
}

func dominantEnding(content string) string {
	crlf := strings.Count(content, "\r\n")
	if crlf > strings.Count(content, "\n")-crlf {
		return "\r\n"
	}
	return "\n"
}

// computeUpdate finds every chunk of an update in order, each after the previous one,
// and returns the new content. A failure names the chunk and why.
func computeUpdate(op *patchOp, content string) (string, []replacement, *patchFailure) {
	nl := dominantEnding(content)
	var reps []replacement
	cursor := 0
	for ci, ch := range op.chunks {
		oldStr := strings.Join(ch.oldLines, "\n")
		newStr := strings.Join(ch.newLines, nl)
		region := cursor
		anchorEnd := -1
		if ch.context != nil {
			var anchors []int // line starts
			var lines []int
			off := 0
			for li, l := range strings.SplitAfter(content, "\n") {
				if off >= cursor && l != "" && strings.Contains(strings.TrimRight(l, "\r\n"), *ch.context) {
					anchors = append(anchors, off+len(l))
					lines = append(lines, li+1)
				}
				off += len(l)
			}
			switch len(anchors) {
			case 0:
				return "", nil, &patchFailure{Code: "NO_MATCH", ChunkIndex: &ci}
			case 1:
			default:
				return "", nil, &patchFailure{Code: "AMBIGUOUS_MATCH", ChunkIndex: &ci, CandidateLines: lines}
			}
			anchorEnd = anchors[0]
			region = anchorEnd
		}
		if len(ch.oldLines) == 0 { // a pure insertion
			at := -1
			switch {
			case ch.endOfFile:
				at = len(content)
			case anchorEnd >= 0:
				at = anchorEnd
			default:
				return "", nil, &patchFailure{Code: "AMBIGUOUS_INSERTION", ChunkIndex: &ci}
			}
			prefix := ""
			if at > 0 && content[at-1] != '\n' {
				prefix = nl
			}
			text := prefix + newStr
			if newStr != "" {
				text += nl
			}
			reps = append(reps, replacement{start: at, end: at, text: text, mode: modeExact, line: lineOf(content, at), chunk: ci})
			cursor = at
			continue
		}
		start, end, mode, fail := matchChunk(content, oldStr, region)
		if fail != nil {
			fail.ChunkIndex = &ci
			return "", nil, fail
		}
		if ch.endOfFile {
			end = len(content)
		}
		text := newStr
		if oldStr == "" && len(ch.newLines) > 0 {
			text += nl
		}
		if ch.endOfFile && strings.HasSuffix(content, "\n") && !strings.HasSuffix(text, "\n") {
			text += nl
		}
		reps = append(reps, replacement{start: start, end: end, text: text, mode: mode, line: lineOf(content, start), chunk: ci})
		cursor = end
	}
	sorted := append([]replacement(nil), reps...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].start > sorted[j].start })
	out := content
	for _, r := range sorted {
		out = out[:r.start] + r.text + out[r.end:]
	}
	return out, reps, nil
}

// matchChunk finds a chunk's old lines, whole lines only, from region on.
func matchChunk(content, oldStr string, region int) (int, int, string, *patchFailure) {
	suffix := content[region:]
	if oldStr == "" { // one blank line
		var found []int
		off := region
		for _, l := range strings.SplitAfter(suffix, "\n") {
			if strings.HasSuffix(l, "\n") && strings.TrimRight(l, "\r\n") == "" {
				found = append(found, off)
			}
			off += len(l)
		}
		switch len(found) {
		case 0:
			return 0, 0, "", &patchFailure{Code: "NO_MATCH"}
		case 1:
			e := strings.IndexByte(content[found[0]:], '\n') + found[0] + 1
			return found[0], e, modeExact, nil
		}
		lines := make([]int, len(found))
		for i, f := range found {
			lines[i] = lineOf(content, f)
		}
		return 0, 0, "", &patchFailure{Code: "AMBIGUOUS_MATCH", CandidateLines: lines}
	}
	endOf := func(m textMatch) int {
		e := m.end
		if m.mode == modeTrailingWhitespace {
			for e < len(suffix) && (suffix[e] == ' ' || suffix[e] == '\t') {
				e++
			}
		}
		return e
	}
	r := runPasses(suffix, oldStr, orderedPasses, func(m textMatch) bool {
		e := endOf(m)
		return (m.start == 0 || suffix[m.start-1] == '\n') &&
			(strings.HasSuffix(oldStr, "\n") || e == len(suffix) || suffix[e] == '\r' || suffix[e] == '\n')
	})
	switch {
	case len(r.matches) == 1:
		m := r.matches[0]
		return region + m.start, region + endOf(m), m.mode, nil
	case len(r.matches) > 1:
		lines := make([]int, len(r.matches))
		for i, m := range r.matches {
			lines[i] = lineOf(content, region+m.start)
		}
		return 0, 0, "", &patchFailure{Code: "AMBIGUOUS_MATCH", CandidateLines: lines}
	}
	return 0, 0, "", &patchFailure{Code: "NO_MATCH"}
}

type patchResult struct {
	Added      []string       `json:"added"`
	Modified   []string       `json:"modified"`
	Deleted    []string       `json:"deleted"`
	Moved      []patchMoved   `json:"moved"`
	MatchModes []patchMode    `json:"matchModes"`
	Diffs      []patchFileDif `json:"diffs"`
}

type patchMoved struct {
	From string `json:"from"`
	To   string `json:"to"`
}

type patchMode struct {
	Path       string `json:"path"`
	ChunkIndex int    `json:"chunkIndex"`
	Mode       string `json:"mode"`
	StartLine  int    `json:"startLine"`
}

type patchFileDif struct {
	Path      string          `json:"path"`
	Hunks     []linediff.Hunk `json:"hunks"`
	Additions int             `json:"additions"`
	Deletions int             `json:"deletions"`
}

// ApplyPatch is apply-patch.
func ApplyPatch() tool.Tool {
	return define(tool.Definition{
		Name: "apply-patch",
		Description: "Apply a context patch to one or more files atomically.\n\nUses a V4A-style context patch format (NOT git unified diff). Hunk line numbers are not used and not required.\n\n" +
			"## When to use\n\n- Multiple distant edits in one file\n- Changes across multiple files at once\n- Combining modifications, creations, deletions, and moves in one operation\n\n" +
			"## When NOT to use\n\n- One small targeted replacement - use edit\n- Several replacements in one file - use multiedit\n- A new file or full rewrite - use write-file\n\n" +
			"## Patch format\n\n```\n*** Begin Patch\n*** Update File: src/example.ts\n@@ function targetFunction(\n context line\n-old line\n+new line\n*** Add File: src/new-file.ts\n+new file content\n*** Delete File: src/obsolete.ts\n*** End Patch\n```\n\n" +
			"- `*** Add File: <path>` creates a file (only `+` lines)\n- `*** Update File: <path>` modifies a file with chunks\n- `*** Delete File: <path>` removes a file\n- `*** Move to: <path>` right after an Update header moves the updated content to a new path\n\n" +
			"Chunks: `@@` begins a chunk, `@@ <context>` begins one after the unique line containing that text; ` ` lines are context, `-` removed, `+` added; `*** End of File` ties a chunk to the end of the file. Exactly one control character is removed from each body line.\n\n" +
			"## Matching\n\nChunks are applied in order; each chunk's removed and context lines are found with the fail-closed passes of edit (exact, line-ending, trailing-whitespace, indentation), whole lines only. A chunk applies only when exactly one candidate is found; an ambiguous chunk fails. A chunk of only added lines needs a context anchor or *** End of File.\n\n" +
			"## Permission model\n\nEvery path is checked before any write. Paths outside the workspace, sensitive files, and any deletion or move need approval. System directories are blocked entirely.",
		InputSchema: []byte(`{"type":"object","properties":{"patch":{"type":"string","description":"The V4A-style context patch content (*** Begin Patch ... *** End Patch)"}},"required":["patch"]}`),
		Timeout:     60000,
		Annotations: destructive(),
	}, applyPatch)
}

type patchTarget struct {
	op             *patchOp
	source, dest   string
	original       string
	result         string
	reps           []replacement
	existedAtStart bool
}

// patchRefusal is why a patch was not applied: the message a model reads and the
// structured failure beside it.
type patchRefusal struct {
	msg string
	f   patchFailure
}

func refuse(msg string, f patchFailure) *patchRefusal { return &patchRefusal{msg, f} }

func applyPatch(ctx context.Context, c *tool.Context, in struct {
	Patch string `json:"patch"`
}) tool.Result {
	ops, r := parsePatchInput(in.Patch)
	if r != nil {
		return fail(r.msg, r.f)
	}
	targets, r := resolveTargets(c, ops)
	if r != nil {
		return fail(r.msg, r.f)
	}
	// Every ask before anything is read or written.
	if err := approvePatch(ctx, c, targets); err != nil {
		return rejection(err)
	}
	for _, t := range targets {
		if r := computeTarget(ctx, c, t); r != nil {
			return fail(r.msg, r.f)
		}
	}
	if r := writeTargets(ctx, c, targets); r != nil {
		return fail(r.msg, r.f)
	}
	res := summarizePatch(targets)
	return ok(res, patchViz(targets, len(res.Added)+len(res.Modified)+len(res.Deleted)+len(res.Moved)))
}

// parsePatchInput parses the patch and refuses one with nothing to do.
func parsePatchInput(patch string) ([]*patchOp, *patchRefusal) {
	if patch == "" {
		return nil, refuse("Patch must be a non-empty string.", patchFailure{Code: "INVALID_INPUT"})
	}
	ops, perr := parsePatch(patch)
	if perr != nil {
		msg := "Parse error: " + perr.msg
		if perr.line > 0 {
			msg = fmt.Sprintf("Parse error at line %d: %s", perr.line, perr.msg)
		}
		return nil, refuse(msg, patchFailure{Code: "PARSE_ERROR", Line: perr.line, Message: perr.msg})
	}
	if len(ops) == 0 {
		return nil, refuse("Patch contains no file operations.", patchFailure{Code: "INVALID_INPUT"})
	}
	return ops, nil
}

// resolveTargets turns each operation into the paths it reads and writes, and refuses the
// whole patch if any of them lies in a system directory.
func resolveTargets(c *tool.Context, ops []*patchOp) ([]*patchTarget, *patchRefusal) {
	targets := make([]*patchTarget, len(ops))
	var blocked []string
	for i, op := range ops {
		t, r := resolveTarget(c, op)
		if r != nil {
			return nil, r
		}
		for _, p := range []string{t.source, t.dest} {
			if c.IsBlockedPath(p) && !contains(blocked, p) {
				blocked = append(blocked, p)
			}
		}
		targets[i] = t
	}
	if len(blocked) > 0 {
		return nil, refuse("Cannot apply patch to system directories: "+strings.Join(blocked, ", "), patchFailure{Code: "BLOCKED_PATH", Message: strings.Join(blocked, ", ")})
	}
	return targets, nil
}

// resolveTarget checks that an update has chunks with something in them, and that a move
// goes somewhere else, then resolves its paths.
func resolveTarget(c *tool.Context, op *patchOp) (*patchTarget, *patchRefusal) {
	if op.kind == "update" {
		if len(op.chunks) == 0 {
			return nil, refuse(fmt.Sprintf("Update File operation on %q contains no chunks.", op.path), patchFailure{Code: "PARSE_ERROR", Path: op.path, Line: op.line})
		}
		for _, ch := range op.chunks {
			if len(ch.oldLines) == 0 && len(ch.newLines) == 0 {
				return nil, refuse(fmt.Sprintf("Update File operation on %q contains an empty chunk.", op.path), patchFailure{Code: "PARSE_ERROR", Path: op.path, Line: op.line})
			}
		}
	}
	t := &patchTarget{op: op, source: c.ResolvePath(op.path), dest: c.ResolvePath(op.path)}
	if op.moveTo != "" {
		t.dest = c.ResolvePath(op.moveTo)
		if t.dest == t.source {
			return nil, refuse("Move destination resolves to the source path: "+op.path, patchFailure{Code: "INVALID_INPUT", Path: op.path})
		}
	}
	return t, nil
}

// approvePatch asks for every path written, then once more for all the files the patch
// deletes or moves away, since a removal is harder to undo than a write.
func approvePatch(ctx context.Context, c *tool.Context, targets []*patchTarget) error {
	var removes []string
	for _, t := range targets {
		for _, p := range []string{t.source, t.dest} {
			if err := approveFile(ctx, c, p, "write"); err != nil {
				return err
			}
			if t.source == t.dest {
				break
			}
		}
		if t.op.kind == "delete" || t.op.moveTo != "" {
			removes = append(removes, t.source)
		}
	}
	if len(removes) == 0 {
		return nil
	}
	patterns := make([]string, len(removes))
	for i, p := range removes {
		patterns[i] = "file:" + p
	}
	return askYes(ctx, c, tool.Ask{Type: tool.AskPermission, Risk: "medium", Resource: "file", Paths: removes, Patterns: patterns,
		Duration: tool.DurationSession, Question: "Applying a patch that deletes or moves files requires approval: " + strings.Join(removes, ", ")})
}

// computeTarget reads what a target holds and computes what it will hold, writing nothing.
func computeTarget(ctx context.Context, c *tool.Context, t *patchTarget) *patchRefusal {
	if t.op.kind == "add" {
		if there, _ := c.FS.Exists(ctx, t.dest); there {
			return refuse("Cannot create file that already exists: "+t.op.path, patchFailure{Code: "DEST_EXISTS", Path: t.op.path})
		}
		if len(t.op.addLines) > 0 {
			t.result = strings.Join(t.op.addLines, "\n") + "\n"
		}
		return nil
	}
	st, err := c.FS.Stat(ctx, t.source)
	if err != nil {
		return refuse("File not found: "+t.op.path, patchFailure{Code: "FILE_NOT_FOUND", Path: t.op.path})
	}
	if st.IsDirectory {
		return refuse(fmt.Sprintf("Cannot %s a directory: %s", t.op.kind, t.op.path), patchFailure{Code: "INVALID_INPUT", Path: t.op.path})
	}
	data, err := c.FS.ReadFile(ctx, t.source)
	if err != nil {
		return refuse(fmt.Sprintf("Cannot read %s: %v", t.op.path, err), patchFailure{Code: "FILE_NOT_FOUND", Path: t.op.path})
	}
	t.original, t.existedAtStart = string(data), true
	if t.op.kind == "delete" {
		return nil
	}
	if t.op.moveTo != "" {
		if there, _ := c.FS.Exists(ctx, t.dest); there {
			return refuse("Cannot move to a file that already exists: "+t.op.moveTo, patchFailure{Code: "DEST_EXISTS", Path: t.op.moveTo})
		}
	}
	out, reps, f := computeUpdate(t.op, t.original)
	if f != nil {
		return chunkRefusal(t.op.path, f)
	}
	t.result, t.reps = out, reps
	return nil
}

// chunkRefusal says which chunk of path failed and what to do about it.
func chunkRefusal(path string, f *patchFailure) *patchRefusal {
	f.Path = path
	var msg string
	switch f.Code {
	case "AMBIGUOUS_INSERTION":
		msg = fmt.Sprintf("Ambiguous pure insertion in chunk %d of %s. Add a context anchor or *** End of File.", *f.ChunkIndex, path)
	case "AMBIGUOUS_MATCH":
		msg = fmt.Sprintf("Found multiple matches for chunk %d of %s.", *f.ChunkIndex, path)
	default:
		msg = fmt.Sprintf("No match for chunk %d of %s. Re-read the file before retrying.", *f.ChunkIndex, path)
	}
	return refuse(msg, *f)
}

// patchJournal is what each path held before the patch touched it, newest last, so a
// failed write can be undone in reverse.
type patchJournal struct {
	entries []patchJournalEntry
}

type patchJournalEntry struct {
	path    string
	had     bool
	content string
}

func (j *patchJournal) record(path string, had bool, content string) {
	j.entries = append(j.entries, patchJournalEntry{path, had, content})
}

// rollback puts back every recorded path, newest first: a path that held something gets
// its content again, a new one is removed. It returns what could not be put back.
func (j *patchJournal) rollback(ctx context.Context, c *tool.Context) []string {
	var errs []string
	for i := len(j.entries) - 1; i >= 0; i-- {
		d := j.entries[i]
		var err error
		if d.had {
			err = c.FS.WriteFile(ctx, d.path, []byte(d.content))
		} else {
			err = c.FS.Remove(ctx, d.path, false)
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("Rollback failed for %s: %v", d.path, err))
		}
	}
	return errs
}

// writeTargets writes every new content, then removes deleted and moved-away files; on a
// failure it puts back what was there.
func writeTargets(ctx context.Context, c *tool.Context, targets []*patchTarget) *patchRefusal {
	var j patchJournal
	for _, t := range targets {
		if t.op.kind == "delete" {
			continue
		}
		had := t.op.kind == "update" && t.op.moveTo == ""
		if err := c.FS.WriteFile(ctx, t.dest, []byte(t.result)); err != nil {
			return refuse(fmt.Sprintf("Failed to write %s: %v", t.dest, err), patchFailure{Code: "APPLY_ERROR", Path: t.dest, Message: err.Error(), RollbackErrors: j.rollback(ctx, c)})
		}
		j.record(t.dest, had, t.original)
	}
	for _, t := range targets {
		if t.op.kind != "delete" && t.op.moveTo == "" {
			continue
		}
		if err := c.FS.Remove(ctx, t.source, false); err != nil {
			return refuse(fmt.Sprintf("Failed to remove %s: %v", t.source, err), patchFailure{Code: "APPLY_ERROR", Path: t.source, Message: err.Error(), RollbackErrors: j.rollback(ctx, c)})
		}
		// A removed file is put back by writing its content again.
		j.record(t.source, true, t.original)
	}
	return nil
}

// summarizePatch lists what the patch did to each file, how each chunk matched, and the diffs.
func summarizePatch(targets []*patchTarget) patchResult {
	res := patchResult{Added: []string{}, Modified: []string{}, Deleted: []string{}, Moved: []patchMoved{}, MatchModes: []patchMode{}, Diffs: []patchFileDif{}}
	for _, t := range targets {
		switch {
		case t.op.kind == "add":
			res.Added = append(res.Added, t.dest)
		case t.op.kind == "delete":
			res.Deleted = append(res.Deleted, t.source)
		case t.op.moveTo != "":
			res.Moved = append(res.Moved, patchMoved{From: t.source, To: t.dest})
			res.Modified = append(res.Modified, t.dest)
		default:
			res.Modified = append(res.Modified, t.dest)
		}
		if t.op.kind == "update" {
			for _, r := range t.reps {
				res.MatchModes = append(res.MatchModes, patchMode{Path: t.dest, ChunkIndex: r.chunk, Mode: r.mode, StartLine: r.line})
			}
			d := linediff.Of(t.original, t.result, linediff.DefaultContext)
			res.Diffs = append(res.Diffs, patchFileDif{Path: t.dest, Hunks: d.Hunks, Additions: d.Additions, Deletions: d.Deletions})
		}
	}
	return res
}

// patchVizLines is how many diff lines (context included) apply-patch draws in all; a patch
// past it draws the rest of its files by name only, so the card stays within the host's
// visualization limit.
const patchVizLines = 4000

// patchViz draws a patch as each file's diff: an update as its changed lines, a new file as
// all added, a deleted one as all removed, a move under both names.
func patchViz(targets []*patchTarget, total int) any {
	items := make([]diffViz, 0, len(targets))
	budget := patchVizLines
	for _, t := range targets {
		var d diffViz
		switch {
		case t.op.kind == "add":
			d = fileDiff(t.dest, "", t.result)
			d.Title = "Created " + t.dest
		case t.op.kind == "delete":
			d = fileDiff(t.source, t.original, "")
			d.Title = "Deleted " + t.source
		case t.op.moveTo != "":
			d = fileDiff(t.dest, t.original, t.result)
			d.Title = "Moved " + t.source + " → " + t.dest
		default:
			d = fileDiff(t.dest, t.original, t.result)
		}
		n := linediff.Diff{Hunks: d.Hunks}.Lines()
		if n > budget {
			d.Hunks = []linediff.Hunk{}
			d.Title = cmp.Or(d.Title, d.Path) + " (too long to draw here)"
		}
		budget -= min(n, budget)
		items = append(items, d)
	}
	return struct {
		Type  string    `json:"type"`
		Title string    `json:"title"`
		Items []diffViz `json:"items"`
	}{tool.VizDiffs, fmt.Sprintf("Applied patch to %d file%s", total, plural(total)), items}
}

// Package linediff owns the whole-line diffs jean2 draws: a tool's "diff" visualization and
// the terminal's diff of a turn. Changes are whole lines with their old and new line numbers
// and a few lines of context, never the matched piece of a line (issue 24: an edit of
// "a - b" in "    return a - b" is the line "    return a - b" removed and the new line
// added). The diff itself is go-udiff's (the Go team's internal/diff, exported).
package linediff

import (
	"strings"

	"github.com/aymanbagabas/go-udiff"
)

// Kinds of a Change, as the "diff" visualization names them (docs/tools.md).
const (
	Context = "context"
	Removed = "removed"
	Added   = "added"
)

// Change is one line of a hunk. A removed line has only its old number, an added line only
// its new one.
type Change struct {
	Type          string `json:"type"`
	Content       string `json:"content"`
	OldLineNumber int    `json:"oldLineNumber,omitempty"`
	NewLineNumber int    `json:"newLineNumber,omitempty"`
}

// Hunk is a run of changes with their context, as in a unified diff's "@@" section.
type Hunk struct {
	OldStart int      `json:"oldStart"`
	OldLines int      `json:"oldLines"`
	NewStart int      `json:"newStart"`
	NewLines int      `json:"newLines"`
	Changes  []Change `json:"changes"`
}

// Diff is the hunks between two texts and how many lines each side lost or gained.
type Diff struct {
	Hunks     []Hunk
	Additions int
	Deletions int
}

// DefaultContext is how many unchanged lines are shown around each change.
const DefaultContext = 3

// Of returns the whole-line diff from old to new with context lines around each change.
// Line ends are dropped, "\r\n" included; a text equal on both sides has no hunks.
func Of(old, new string, context int) Diff {
	d := Diff{Hunks: []Hunk{}}
	if old == new {
		return d
	}
	u, err := udiff.ToUnifiedDiff("", "", old, udiff.Lines(old, new), context)
	if err != nil {
		// Lines makes edits ToUnifiedDiff accepts; this cannot happen. An empty diff is the
		// honest answer if it does: nothing is claimed.
		return d
	}
	for _, h := range u.Hunks {
		o, n := h.FromLine, h.ToLine
		hunk := Hunk{OldStart: o, NewStart: n, Changes: make([]Change, 0, len(h.Lines))}
		for _, l := range h.Lines {
			text := strings.TrimSuffix(strings.TrimSuffix(l.Content, "\n"), "\r")
			switch l.Kind {
			case udiff.Equal:
				hunk.Changes = append(hunk.Changes, Change{Type: Context, Content: text, OldLineNumber: o, NewLineNumber: n})
				o, n = o+1, n+1
			case udiff.Delete:
				hunk.Changes = append(hunk.Changes, Change{Type: Removed, Content: text, OldLineNumber: o})
				o++
				d.Deletions++
			case udiff.Insert:
				hunk.Changes = append(hunk.Changes, Change{Type: Added, Content: text, NewLineNumber: n})
				n++
				d.Additions++
			}
		}
		hunk.OldLines, hunk.NewLines = o-hunk.OldStart, n-hunk.NewStart
		d.Hunks = append(d.Hunks, hunk)
	}
	return d
}

// Lines is how many changes (context included) the diff holds: what drawing it costs.
func (d Diff) Lines() int {
	n := 0
	for _, h := range d.Hunks {
		n += len(h.Changes)
	}
	return n
}

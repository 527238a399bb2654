package builtin

import (
	"fmt"
	"strings"

	"github.com/jean2/jean2/internal/linediff"
	"github.com/jean2/jean2/tool"
)

// The matcher of edit and multiedit: ordered passes, strictest first, stopping at the first
// pass that finds any candidate. One candidate is the match; more than one is ambiguous and
// never falls through to a looser pass, so an edit never lands on a guess. The loose passes
// map every normalized character back to a span of the original, so the replaced span is
// always real text of the file.

const (
	modeExact              = "exact"
	modeLineEndings        = "line_endings"
	modeTrailingWhitespace = "trailing_whitespace"
	modeIndentation        = "indentation"
	modeLineStart          = "line_start"
	modeLineEnd            = "line_end"
)

var modeLabel = map[string]string{
	modeExact: "exact", modeLineEndings: "line-ending", modeTrailingWhitespace: "trailing-whitespace",
	modeIndentation: "indentation", modeLineStart: "line-start", modeLineEnd: "line-end",
}

var knownStrategies = map[string]bool{"exact": true, "line_start": true, "line_end": true, "partial": true, "multi_line": true}

type textMatch struct {
	start, end int // byte offsets in the content
	line       int // 1-based line of start
	mode       string
	delta      int // the indentation pass's shift of the search's lines
}

type matchAttempt struct {
	Mode  string `json:"mode"`
	Count int    `json:"count"`
}

type matchSearch struct {
	matches  []textMatch
	attempts []matchAttempt
	mode     string
}

func lineOf(content string, off int) int { return strings.Count(content[:off], "\n") + 1 }

// startsIndented reports whether a multi-line search begins with indentation: then a match
// must begin at a line start, or "  x\n" would match inside "    x\n".
func startsIndented(search string) bool {
	return strings.Contains(search, "\n") && (strings.HasPrefix(search, " ") || strings.HasPrefix(search, "\t"))
}

func atLineStart(content string, i int) bool {
	return i == 0 || content[i-1] == '\n' || content[i-1] == '\r'
}

func exactMatches(content, search, mode string) []textMatch {
	var out []textMatch
	if search == "" {
		return nil
	}
	for cur := 0; cur <= len(content)-len(search); {
		i := strings.Index(content[cur:], search)
		if i < 0 {
			break
		}
		i += cur
		out = append(out, textMatch{start: i, end: i + len(search), line: lineOf(content, i), mode: mode})
		cur = i + len(search)
	}
	return out
}

// normalized is a text rewritten by a pass, with each byte's span in the original.
type normalized struct {
	text       string
	start, end []int
}

// normLineEndings folds "\r\n" into "\n".
func normLineEndings(s string) normalized {
	var b strings.Builder
	n := normalized{}
	for i := 0; i < len(s); {
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			b.WriteByte('\n')
			n.start, n.end = append(n.start, i), append(n.end, i+2)
			i += 2
			continue
		}
		b.WriteByte(s[i])
		n.start, n.end = append(n.start, i), append(n.end, i+1)
		i++
	}
	n.text = b.String()
	return n
}

// normTrailing drops spaces and tabs before a line end and folds "\r\n" into "\n".
func normTrailing(s string) normalized {
	var b strings.Builder
	n := normalized{}
	for i := 0; i < len(s); {
		switch {
		case s[i] == ' ' || s[i] == '\t':
			j := i
			for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
				j++
			}
			if !(j >= len(s) || s[j] == '\n' || s[j] == '\r') {
				for k := i; k < j; k++ {
					b.WriteByte(s[k])
					n.start, n.end = append(n.start, k), append(n.end, k+1)
				}
			}
			i = j
		case s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n':
			b.WriteByte('\n')
			n.start, n.end = append(n.start, i), append(n.end, i+2)
			i += 2
		default:
			b.WriteByte(s[i])
			n.start, n.end = append(n.start, i), append(n.end, i+1)
			i++
		}
	}
	n.text = b.String()
	return n
}

func normalizedMatches(content, search string, norm func(string) normalized, mode string) []textMatch {
	if search == "" {
		return nil
	}
	c, s := norm(content), norm(search)
	if s.text == "" {
		return nil
	}
	var out []textMatch
	for cur := 0; cur <= len(c.text)-len(s.text); {
		i := strings.Index(c.text[cur:], s.text)
		if i < 0 {
			break
		}
		i += cur
		e := i + len(s.text)
		start, end := c.start[i], c.end[e-1]
		out = append(out, textMatch{start: start, end: end, line: lineOf(content, start), mode: mode})
		cur = e
	}
	return out
}

type rawLine struct{ text, term string }

func splitLines(s string) []rawLine {
	var out []rawLine
	start := 0
	for i := 0; i < len(s); {
		switch {
		case s[i] == '\n':
			out = append(out, rawLine{s[start:i], "\n"})
			i++
			start = i
		case s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n':
			out = append(out, rawLine{s[start:i], "\r\n"})
			i += 2
			start = i
		case s[i] == '\r':
			out = append(out, rawLine{s[start:i], "\r"})
			i++
			start = i
		default:
			i++
		}
	}
	return append(out, rawLine{s[start:], ""})
}

func indentOf(s string) string { return s[:len(s)-len(strings.TrimLeft(s, " \t"))] }

// indentationMatches tries the search shifted by one indentation delta for all its
// nonblank lines, for every delta the file's lines suggest.
func indentationMatches(content, search string) []textMatch {
	lines := splitLines(search)
	base := -1
	for _, l := range lines {
		if strings.TrimLeft(l.text, " \t") != "" {
			base = len(indentOf(l.text))
			break
		}
	}
	if base < 0 {
		return nil
	}
	deltas := map[int]bool{}
	var order []int
	for _, l := range splitLines(content) {
		d := len(indentOf(l.text)) - base
		if !deltas[d] {
			deltas[d] = true
			order = append(order, d)
		}
	}
	seen := map[int]bool{}
	var out []textMatch
	for _, d := range order {
		shifted, good := shift(lines, d)
		if !good {
			continue
		}
		for _, m := range exactMatches(content, shifted, modeIndentation) {
			m.delta = d
			if !seen[m.start] {
				seen[m.start] = true
				out = append(out, m)
			}
		}
	}
	return out
}

func shift(lines []rawLine, delta int) (string, bool) {
	var b strings.Builder
	for _, l := range lines {
		ws := indentOf(l.text)
		body := l.text[len(ws):]
		if body == "" {
			b.WriteString(l.text + l.term)
			continue
		}
		if delta >= 0 {
			b.WriteString(strings.Repeat(" ", delta) + ws)
		} else {
			if len(ws) < -delta {
				return "", false
			}
			b.WriteString(ws[:len(ws)+delta])
		}
		b.WriteString(body + l.term)
	}
	return b.String(), true
}

func anchoredMatches(content, search string, atEnd bool) []textMatch {
	if search == "" || strings.Contains(search, "\n") {
		return nil
	}
	var out []textMatch
	off := 0
	for _, l := range splitLines(content) {
		switch {
		case !atEnd && strings.HasPrefix(l.text, search):
			out = append(out, textMatch{start: off, end: off + len(search), line: lineOf(content, off), mode: modeLineStart})
		case atEnd && strings.HasSuffix(l.text, search):
			s := off + len(l.text) - len(search)
			out = append(out, textMatch{start: s, end: off + len(l.text), line: lineOf(content, s), mode: modeLineEnd})
		}
		off += len(l.text) + len(l.term)
	}
	return out
}

// findMatches runs the passes a strategy names: none (or partial, multi_line) the safe
// ordered passes, exact only the exact one, line_start and line_end their anchored ones.
func findMatches(content, search, strategy string) matchSearch {
	switch strategy {
	case "line_start", "line_end":
		ms := anchoredMatches(content, search, strategy == "line_end")
		r := matchSearch{matches: ms, attempts: []matchAttempt{{strategy, len(ms)}}}
		if len(ms) > 0 {
			r.mode = strategy
		}
		return r
	}
	passes := orderedPasses
	if strategy == "exact" {
		passes = passes[:1]
	}
	return runPasses(content, search, passes, nil)
}

var orderedPasses = []string{modeExact, modeLineEndings, modeTrailingWhitespace, modeIndentation}

// runPasses runs the passes in order; keep, when not nil, drops candidates before they
// count (apply-patch keeps whole lines only).
func runPasses(content, search string, passes []string, keep func(textMatch) bool) matchSearch {
	var r matchSearch
	for _, mode := range passes {
		var ms []textMatch
		switch mode {
		case modeExact:
			ms = exactMatches(content, search, modeExact)
		case modeLineEndings:
			ms = normalizedMatches(content, search, normLineEndings, mode)
		case modeTrailingWhitespace:
			ms = normalizedMatches(content, search, normTrailing, mode)
		case modeIndentation:
			ms = indentationMatches(content, search)
		}
		if startsIndented(search) {
			kept := ms[:0]
			for _, m := range ms {
				if atLineStart(content, m.start) {
					kept = append(kept, m)
				}
			}
			ms = kept
		}
		if keep != nil {
			kept := ms[:0]
			for _, m := range ms {
				if keep(m) {
					kept = append(kept, m)
				}
			}
			ms = kept
		}
		r.attempts = append(r.attempts, matchAttempt{mode, len(ms)})
		if len(ms) > 0 {
			r.matches, r.mode = ms, mode
			return r
		}
	}
	return r
}

func summarizeAttempts(as []matchAttempt) string {
	parts := make([]string, len(as))
	for i, a := range as {
		parts[i] = fmt.Sprintf("%s=%d", modeLabel[a.Mode], a.Count)
	}
	return strings.Join(parts, ", ")
}

// adaptReplacement gives a replacement found by a line-ending-tolerant pass the file's
// dominant line ending, so a CRLF file stays CRLF.
//
// A replacement found by the indentation pass is shifted as the search was, so the new
// lines keep the indentation of the lines they replace (the catalogue's edit leaves the
// replacement as given, which unindents a block matched deeper than it was written).
func adaptReplacement(repl string, m textMatch, content string) string {
	if m.mode == modeIndentation && m.delta != 0 {
		if shifted, good := shift(splitLines(repl), m.delta); good {
			return shifted
		}
		return repl
	}
	mode := m.mode
	if (mode != modeLineEndings && mode != modeTrailingWhitespace) || !strings.Contains(repl, "\n") {
		return repl
	}
	crlf := strings.Count(content, "\r\n")
	lf := strings.Count(content, "\n") - crlf
	if crlf <= lf {
		return repl
	}
	return strings.ReplaceAll(strings.ReplaceAll(repl, "\r\n", "\n"), "\n", "\r\n")
}

type matchInfoViz struct {
	Strategy   string `json:"strategy"`
	LineNumber int    `json:"lineNumber"`
}

// diffViz is the "diff" visualization.
type diffViz struct {
	Type      string          `json:"type"`
	Title     string          `json:"title,omitempty"`
	Path      string          `json:"path"`
	Language  string          `json:"language"`
	Hunks     []linediff.Hunk `json:"hunks"`
	Additions int             `json:"additions"`
	Deletions int             `json:"deletions"`
	MatchInfo *matchInfoViz   `json:"matchInfo,omitempty"`
}

// fileDiff draws a file's change from old to new as whole lines with their numbers and
// context (an edit inside a line shows the line before and after, not the piece).
func fileDiff(path, old, new string) diffViz {
	d := linediff.Of(old, new, linediff.DefaultContext)
	return diffViz{Type: tool.VizDiff, Path: path, Language: languageOf(path), Hunks: d.Hunks,
		Additions: d.Additions, Deletions: d.Deletions}
}

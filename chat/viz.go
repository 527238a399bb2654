package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/jean2/jean2/internal/termtext"
	"github.com/jean2/jean2/tool"
)

// chatStyle colours the chat's output with ANSI escapes, or not at all on a non-terminal or
// when NO_COLOR is set (https://no-color.org).
type chatStyle struct{ color bool }

func (s chatStyle) wrap(code, text string) string {
	if !s.color || text == "" {
		return text
	}
	return "\x1b[" + code + "m" + text + "\x1b[0m"
}

func (s chatStyle) bold(t string) string   { return s.wrap("1", t) }
func (s chatStyle) dim(t string) string    { return s.wrap("2", t) }
func (s chatStyle) red(t string) string    { return s.wrap("31", t) }
func (s chatStyle) green(t string) string  { return s.wrap("32", t) }
func (s chatStyle) yellow(t string) string { return s.wrap("33", t) }
func (s chatStyle) cyan(t string) string   { return s.wrap("36", t) }
func (s chatStyle) strike(t string) string { return s.wrap("9", t) }

// clip shortens s to at most n runes, marking the cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:max(n-1, 0)]) + "…"
}

// vizLimits bound how much of one visualization the terminal shows; the web client shows
// all of it.
const (
	vizMaxLines       = 400
	vizCollapsedLines = 12
	vizMaxCell        = 40
)

// vizWriter counts the lines it writes and stops at a limit, saying how many it left out.
type vizWriter struct {
	w       io.Writer
	st      chatStyle
	indent  string
	limit   int
	written int
	dropped int
}

func (v *vizWriter) line(s string) {
	if v.written >= v.limit {
		v.dropped++
		return
	}
	v.written++
	fmt.Fprintf(v.w, "%s%s\n", v.indent, s)
}

func (v *vizWriter) finish() {
	if v.dropped > 0 {
		fmt.Fprintf(v.w, "%s%s\n", v.indent, v.st.dim(fmt.Sprintf("… %d more lines (the web client shows everything)", v.dropped)))
	}
}

// Shapes of REFERENCE §6, decoded leniently: a field of the wrong type is left at its zero
// value rather than failing the whole drawing (the host checked the shape already).
type (
	vizCommon struct {
		Type      string `json:"type"`
		Title     string `json:"title"`
		Collapsed bool   `json:"collapsed"`
	}
	vizChange struct {
		Type          string `json:"type"`
		Content       string `json:"content"`
		OldLineNumber *int   `json:"oldLineNumber"`
		NewLineNumber *int   `json:"newLineNumber"`
	}
	vizHunk struct {
		OldStart int         `json:"oldStart"`
		OldLines int         `json:"oldLines"`
		NewStart int         `json:"newStart"`
		NewLines int         `json:"newLines"`
		Changes  []vizChange `json:"changes"`
	}
	vizDiff struct {
		vizCommon
		Path      string    `json:"path"`
		Language  string    `json:"language"`
		Hunks     []vizHunk `json:"hunks"`
		Additions int       `json:"additions"`
		Deletions int       `json:"deletions"`
	}
	vizCode struct {
		vizCommon
		Path           string `json:"path"`
		Content        string `json:"content"`
		Language       string `json:"language"`
		Created        bool   `json:"created"`
		HighlightLines []int  `json:"highlightLines"`
		LineCount      int    `json:"lineCount"`
	}
	vizFile struct {
		Path    string `json:"path"`
		Action  string `json:"action"`
		Line    int    `json:"line"`
		Content string `json:"content"`
	}
	vizFileList struct {
		vizCommon
		Files  []vizFile `json:"files"`
		Groups []struct {
			Label string    `json:"label"`
			Icon  string    `json:"icon"`
			Files []vizFile `json:"files"`
		} `json:"groups"`
		Total int `json:"total"`
	}
	vizTable struct {
		vizCommon
		Columns []struct {
			Key   string `json:"key"`
			Label string `json:"label"`
		} `json:"columns"`
		Rows      []map[string]json.RawMessage `json:"rows"`
		TotalRows int                          `json:"totalRows"`
		HasMore   bool                         `json:"hasMore"`
	}
	vizMarkdown struct {
		vizCommon
		Content   string `json:"content"`
		SourceURL string `json:"sourceUrl"`
	}
	vizShell struct {
		vizCommon
		Command  string `json:"command"`
		Stdout   string `json:"stdout"`
		Stderr   string `json:"stderr"`
		ExitCode int    `json:"exitCode"`
	}
	vizTodo struct {
		vizCommon
		Items []struct {
			Content  string `json:"content"`
			Status   string `json:"status"`
			Priority string `json:"priority"`
		} `json:"items"`
	}
	vizStructured struct {
		vizCommon
		Data       json.RawMessage `json:"data"`
		FormatName string          `json:"formatName"`
	}
	vizNone struct {
		vizCommon
		Message string `json:"message"`
	}
	vizDiffList struct {
		Items []vizDiff `json:"items"`
	}
	vizImages struct {
		Images []struct {
			MIMEType string `json:"mimeType"`
			Data     string `json:"data"`
		} `json:"images"`
	}
)

// drawViz draws a tool's visualization for a terminal, indented under its tool call. It
// never fails: what cannot be drawn is said in one line.
func drawViz(w io.Writer, st chatStyle, raw json.RawMessage, indent string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return
	}
	var common vizCommon
	if err := json.Unmarshal(raw, &common); err != nil {
		fmt.Fprintf(w, "%s%s\n", indent, st.dim("(a visualization that is not a JSON object)"))
		return
	}
	v := &vizWriter{w: w, st: st, indent: indent, limit: vizMaxLines}
	if common.Collapsed {
		v.limit = vizCollapsedLines
	}
	if common.Title != "" {
		v.line(st.bold(termtext.Line(common.Title)))
	}
	drawKind(v, raw, common.Type)
	v.finish()
}

// drawKind draws the visualization by its type; one the terminal does not know is named.
func drawKind(v *vizWriter, raw json.RawMessage, typ string) {
	switch typ {
	case tool.VizDiff:
		drawAs(v, raw, typ, drawDiff)
	case tool.VizDiffs:
		drawAs(v, raw, typ, func(v *vizWriter, ds vizDiffList) { drawDiffs(v, ds.Items) })
	case tool.VizCode:
		drawAs(v, raw, typ, drawCode)
	case tool.VizFileList:
		drawAs(v, raw, typ, drawFileList)
	case tool.VizTable:
		drawAs(v, raw, typ, drawTable)
	case tool.VizMarkdown:
		drawAs(v, raw, typ, drawMarkdown)
	case tool.VizShellOutput:
		drawAs(v, raw, typ, drawShell)
	case tool.VizTodoList:
		drawAs(v, raw, typ, drawTodo)
	case tool.VizStructuredResponse:
		drawAs(v, raw, typ, drawStructured)
	case tool.VizNone:
		drawAs(v, raw, typ, func(v *vizWriter, n vizNone) {
			if n.Message != "" {
				v.line(v.st.dim(termtext.Line(n.Message)))
			}
		})
	case tool.VizImages:
		drawAs(v, raw, typ, drawImages)
	default:
		v.line(v.st.dim(fmt.Sprintf("(a %q visualization, which the terminal does not draw)", termtext.Line(typ))))
	}
}

// drawAs reads raw as a T and draws it; what cannot be read is said in one line.
func drawAs[T any](v *vizWriter, raw json.RawMessage, typ string, draw func(*vizWriter, T)) {
	var x T
	if err := json.Unmarshal(raw, &x); err != nil {
		v.line(v.st.dim(fmt.Sprintf("(a %s visualization that could not be read: %v)", termtext.Line(typ), err)))
		return
	}
	draw(v, x)
}

// drawImages says what images there are: a terminal draws no images, so each is saved to a
// file a person can open.
func drawImages(v *vizWriter, im vizImages) {
	for _, i := range im.Images {
		v.line(v.st.dim(imageLine(i.MIMEType, i.Data)))
	}
}

// drawDiffs draws apply-patch's diffs one after the other, each under the title that names
// what was done to its file (created, deleted, moved).
func drawDiffs(v *vizWriter, items []vizDiff) {
	for i, d := range items {
		if i > 0 {
			v.line("")
		}
		if d.Title != "" {
			v.line(v.st.bold(termtext.Line(d.Title)))
		}
		drawDiff(v, d)
	}
}

func drawDiff(v *vizWriter, d vizDiff) {
	st := v.st
	v.line(fmt.Sprintf("%s  %s %s", st.bold(termtext.Line(d.Path)), st.green(fmt.Sprintf("+%d", d.Additions)), st.red(fmt.Sprintf("-%d", d.Deletions))))
	// The line-number gutter is as wide as the largest number in the diff.
	width := 1
	for _, h := range d.Hunks {
		width = max(width, len(strconv.Itoa(h.OldStart+h.OldLines)), len(strconv.Itoa(h.NewStart+h.NewLines)))
	}
	num := func(n int, ok bool) string {
		if !ok {
			return strings.Repeat(" ", width)
		}
		return fmt.Sprintf("%*d", width, n)
	}
	for _, h := range d.Hunks {
		v.line(st.cyan(fmt.Sprintf("@@ -%d,%d +%d,%d @@", h.OldStart, h.OldLines, h.NewStart, h.NewLines)))
		oldN, newN := h.OldStart, h.NewStart
		for _, c := range h.Changes {
			o, n := oldN, newN
			if c.OldLineNumber != nil {
				o = *c.OldLineNumber
			}
			if c.NewLineNumber != nil {
				n = *c.NewLineNumber
			}
			content := termtext.Line(strings.TrimRight(c.Content, "\r\n"))
			switch c.Type {
			case "added":
				v.line(st.dim(num(0, false)+" "+num(n, true)+" ") + st.green("+"+content))
				newN = n + 1
			case "removed":
				v.line(st.dim(num(o, true)+" "+num(0, false)+" ") + st.red("-"+content))
				oldN = o + 1
			default:
				v.line(st.dim(num(o, true)+" "+num(n, true)+" ") + " " + content)
				oldN, newN = o+1, n+1
			}
		}
	}
}

func drawCode(v *vizWriter, c vizCode) {
	st := v.st
	lines := strings.Split(strings.TrimRight(c.Content, "\n"), "\n")
	count := c.LineCount
	if count == 0 {
		count = len(lines)
	}
	what := fmt.Sprintf("%d lines", count)
	if c.Created {
		what = "created, " + what
	}
	if c.Language != "" {
		what += ", " + termtext.Line(c.Language)
	}
	v.line(fmt.Sprintf("%s  %s", st.bold(termtext.Line(c.Path)), st.dim("("+what+")")))
	highlight := map[int]bool{}
	for _, n := range c.HighlightLines {
		highlight[n] = true
	}
	width := len(strconv.Itoa(len(lines)))
	for i, l := range lines {
		n := i + 1
		gutter := st.dim(fmt.Sprintf("%*d │", width, n))
		text := termtext.Line(strings.TrimRight(l, "\r"))
		if highlight[n] {
			gutter = st.yellow(fmt.Sprintf("%*d ▶", width, n))
			text = st.bold(text)
		}
		v.line(gutter + " " + text)
	}
}

func drawFileList(v *vizWriter, f vizFileList) {
	st := v.st
	shown := 0
	files := func(list []vizFile, indent string) {
		for _, file := range list {
			shown++
			mark, path := " ", termtext.Line(file.Path)
			switch file.Action {
			case "created":
				mark, path = st.green("+"), st.green(path)
			case "modified":
				mark, path = st.yellow("~"), st.yellow(path)
			case "deleted":
				mark, path = st.red("-"), st.red(path)
			}
			s := indent + mark + " " + path
			if file.Line > 0 {
				s += st.dim(fmt.Sprintf(":%d", file.Line))
			}
			if file.Content != "" {
				s += "  " + st.dim(clip(strings.TrimSpace(termtext.Line(file.Content)), 120))
			}
			v.line(s)
		}
	}
	files(f.Files, "")
	icons := map[string]string{"edit": "✎", "plus": "+", "trash": "✗", "search": "⌕"}
	for _, g := range f.Groups {
		icon := icons[g.Icon]
		if icon != "" {
			icon += " "
		}
		v.line(st.bold(icon+termtext.Line(g.Label)) + st.dim(fmt.Sprintf(" (%d)", len(g.Files))))
		files(g.Files, "  ")
	}
	if f.Total > shown {
		v.line(st.dim(fmt.Sprintf("… %d files in all", f.Total)))
	} else if shown == 0 {
		v.line(st.dim("(no files)"))
	}
}

// cellText shows one table cell: a string as is, anything else as compact JSON.
func cellText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return termtext.Line(s)
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return ""
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) == nil {
		return termtext.Line(buf.String())
	}
	return termtext.Line(string(raw))
}

func drawTable(v *vizWriter, t vizTable) {
	st := v.st
	if len(t.Columns) == 0 {
		v.line(st.dim("(a table without columns)"))
		return
	}
	head := make([]string, len(t.Columns))
	widths := make([]int, len(t.Columns))
	for i, c := range t.Columns {
		head[i] = c.Label
		if head[i] == "" {
			head[i] = c.Key
		}
		head[i] = clip(termtext.Line(head[i]), vizMaxCell)
		widths[i] = utf8.RuneCountInString(head[i])
	}
	cells := make([][]string, len(t.Rows))
	for r, row := range t.Rows {
		cells[r] = make([]string, len(t.Columns))
		for i, c := range t.Columns {
			cells[r][i] = clip(cellText(row[c.Key]), vizMaxCell)
			widths[i] = max(widths[i], utf8.RuneCountInString(cells[r][i]))
		}
	}
	pad := func(s string, w int) string { return s + strings.Repeat(" ", w-utf8.RuneCountInString(s)) }
	row := func(vals []string, style func(string) string) string {
		parts := make([]string, len(vals))
		for i, s := range vals {
			parts[i] = style(pad(s, widths[i]))
		}
		return strings.TrimRight(strings.Join(parts, "  "), " ")
	}
	v.line(row(head, st.bold))
	rule := make([]string, len(widths))
	for i, w := range widths {
		rule[i] = strings.Repeat("─", w)
	}
	v.line(st.dim(strings.Join(rule, "  ")))
	for _, r := range cells {
		v.line(row(r, func(s string) string { return s }))
	}
	switch {
	case t.TotalRows > len(t.Rows):
		v.line(st.dim(fmt.Sprintf("%d of %d rows", len(t.Rows), t.TotalRows)))
	case t.HasMore:
		v.line(st.dim(fmt.Sprintf("%d rows, more not shown", len(t.Rows))))
	}
}

func drawMarkdown(v *vizWriter, m vizMarkdown) {
	st := v.st
	fence := false
	for _, l := range strings.Split(strings.TrimRight(termtext.Text(m.Content), "\n"), "\n") {
		trimmed := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			fence = !fence
			v.line(st.dim(l))
		case fence:
			v.line(st.cyan(l))
		case strings.HasPrefix(trimmed, "#"):
			v.line(st.bold(l))
		default:
			v.line(l)
		}
	}
	if m.SourceURL != "" {
		v.line(st.dim("source: " + termtext.Line(m.SourceURL)))
	}
}

func drawShell(v *vizWriter, s vizShell) {
	st := v.st
	v.line(st.bold("$ " + termtext.Line(s.Command)))
	// The tail of each stream: where a command says how it ended.
	drawTail(v, outputLines(s.Stdout), func(l string) string { return l })
	drawTail(v, outputLines(s.Stderr), st.red)
	code := fmt.Sprintf("exit code %d", s.ExitCode)
	if s.ExitCode == 0 {
		v.line(st.green(code))
	} else {
		v.line(st.red(code))
	}
}

func outputLines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(termtext.Text(strings.ReplaceAll(s, "\r\n", "\n")), "\n")
}

func drawTodo(v *vizWriter, t vizTodo) {
	st := v.st
	for _, it := range t.Items {
		content := termtext.Line(it.Content)
		var s string
		switch it.Status {
		case "completed":
			s = st.green("[x] ") + content
		case "in_progress":
			s = st.yellow("[~] " + content)
		case "cancelled":
			s = st.dim("[-] ") + st.strike(st.dim(content))
		default:
			s = "[ ] " + content
		}
		switch it.Priority {
		case "high":
			s += " " + st.red("(high)")
		case "low":
			s += " " + st.dim("(low)")
		}
		v.line(s)
	}
	if len(t.Items) == 0 {
		v.line(st.dim("(no items)"))
	}
}

func drawStructured(v *vizWriter, s vizStructured) {
	if s.FormatName != "" {
		v.line(v.st.bold(termtext.Line(s.FormatName)))
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, bytes.TrimSpace(s.Data), "", "  "); err != nil {
		v.line(termtext.Line(string(s.Data)))
		return
	}
	for _, l := range strings.Split(buf.String(), "\n") {
		v.line(termtext.Line(l))
	}
}

package chat

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/jean2/jean2/internal/linediff"
	"github.com/jean2/jean2/internal/termtext"
)

// fileSide is one side of a changed file as the server's ledger view sends it (GET
// /api/sessions/{id}/ledgers, the web client's "Changed N files" dialog reads the same).
type fileSide struct {
	Exists   bool    `json:"exists"`
	IsDir    bool    `json:"isDir"`
	Text     *string `json:"text"`
	Binary   bool    `json:"binary"`
	TooLarge bool    `json:"tooLarge"`
	Size     int64   `json:"size"`
	Unknown  bool    `json:"unknown"`
}

// diffCommand is /diff: the files a turn changed, each as its whole-line diff. Alone it shows
// the latest turn that changed files; /diff N the Nth such turn of the session, as /restore
// numbers them.
func (u *chatUI) diffCommand(ctx context.Context, arg string) {
	var led struct {
		Turns []turnChanges `json:"turns"`
	}
	if err := u.api.Call(ctx, http.MethodGet, "/api/sessions/"+url.PathEscape(u.ses.ID)+"/ledgers", nil, &led); err != nil {
		u.println(u.st.red("Cannot show the changes: " + termtext.Text(err.Error())))
		return
	}
	turns := fileTurns(led.Turns)
	if len(turns) == 0 {
		u.println(u.st.dim("No turn of this session has changed a file yet."))
		return
	}
	n := len(turns)
	if arg = strings.TrimSpace(arg); arg != "" {
		i, err := strconv.Atoi(arg)
		if err != nil || i < 1 || i > len(turns) {
			u.println(u.st.dim(fmt.Sprintf("(/diff N shows the Nth turn that changed files: 1 to %d; /diff alone the latest)", len(turns))))
			return
		}
		n = i
	}
	t := turns[n-1]
	head := fmt.Sprintf("Turn %d of %d, %s: changed %d file%s", n, len(turns), t.CreatedAt.Local().Format("Jan 2 15:04"), len(t.Files), plural(len(t.Files)))
	if t.Changed.Failed > 0 {
		head += fmt.Sprintf(" (%d failed)", t.Changed.Failed)
	}
	u.println(u.st.bold(head))
	for _, f := range t.Files {
		u.drawFileChange(f)
	}
}

// fileTurns keeps the turns that changed files, in order: /diff N and /restore number
// these alike (a turn that changed nothing has nothing to show or undo).
func fileTurns(turns []turnChanges) []turnChanges {
	var out []turnChanges
	for _, t := range turns {
		if len(t.Files) > 0 {
			out = append(out, t)
		}
	}
	return out
}

// drawFileChange draws one path of a turn: its operations, then what changed in it.
func (u *chatUI) drawFileChange(f changedFile) {
	line := "  " + u.st.bold(u.rel(f.Path))
	if len(f.Ops) > 0 {
		line += u.st.dim("  " + termtext.Line(strings.Join(f.Ops, ", ")))
	}
	if len(f.Tools) > 0 {
		line += u.st.dim(" by " + termtext.Line(strings.Join(f.Tools, ", ")))
	}
	u.println(line)
	for _, e := range f.Errors {
		u.println("    " + u.st.red(termtext.Line(e)))
	}
	b, a := f.Before, f.After
	if b == nil {
		b = &fileSide{Unknown: true}
	}
	if a == nil {
		a = &fileSide{Unknown: true}
	}
	switch {
	case !f.OK:
		u.println(u.st.dim("    not changed: the change failed"))
	case b.IsDir || a.IsDir:
		what := "changed"
		if !b.Exists {
			what = "created"
		} else if !a.Exists {
			what = "removed"
		}
		u.println(u.st.dim("    folder " + what))
	case b.Binary || a.Binary:
		u.println(u.st.dim("    binary file: no text diff"))
	case b.TooLarge || a.TooLarge:
		u.println(u.st.dim(fmt.Sprintf("    too large to show (%d bytes)", max(a.Size, b.Size))))
	case b.Unknown || a.Unknown:
		u.println(u.st.dim("    no record of its content to compare"))
	default:
		u.drawTextDiff(f.Path, b, a)
	}
}

// drawTextDiff draws the whole-line diff of a file's two sides with the tools' diff drawing.
func (u *chatUI) drawTextDiff(path string, b, a *fileSide) {
	text := func(s *fileSide) string {
		if !s.Exists || s.Text == nil {
			return ""
		}
		return *s.Text
	}
	d := linediff.Of(text(b), text(a), linediff.DefaultContext)
	if len(d.Hunks) == 0 {
		u.println(u.st.dim("    no line changed"))
		return
	}
	raw, err := json.Marshal(map[string]any{"type": "diff", "path": u.rel(path), "hunks": d.Hunks,
		"additions": d.Additions, "deletions": d.Deletions})
	if err != nil {
		return // a diff of strings and numbers always marshals
	}
	drawViz(u.out, u.st, raw, "    ")
}

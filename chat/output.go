package chat

import (
	"fmt"
	"strings"

	"github.com/jean2/jean2/internal/termtext"
)

// How much of a command's output the terminal shows: the first lines as they stream in,
// then, once the command ends, the tail of each stream. The web client shows everything.
const (
	streamedLines   = 8
	shellTailLines  = 20
	shellHiddenNote = "the web client shows everything"
)

// streamedOutput is what is on screen of one running call's streamed output.
type streamedOutput struct {
	shown   int    // lines drawn
	partial string // the end of the last chunk, not a whole line yet
	folded  bool   // the "output goes on" line is drawn
}

// showStreamed draws the output a running command streams (shell progress), a line at a
// time, up to streamedLines; the rest waits for the command's end, where its tail is drawn.
func (u *chatUI) showStreamed(partID, chunk string) {
	o := u.outputs[partID]
	if o == nil {
		o = &streamedOutput{}
		u.outputs[partID] = o
	}
	if o.folded {
		return
	}
	lines := strings.Split(o.partial+strings.ReplaceAll(chunk, "\r\n", "\n"), "\n")
	o.partial = lines[len(lines)-1]
	for _, l := range lines[:len(lines)-1] {
		if o.shown == streamedLines {
			o.folded = true
			u.println(u.st.dim("  … (the output goes on; its last lines are shown when the command ends)"))
			return
		}
		o.shown++
		u.println(u.st.dim("  │ ") + termtext.Line(l))
	}
}

// drawTail draws the last shellTailLines of lines, after a line saying how many came
// before them.
func drawTail(v *vizWriter, lines []string, style func(string) string) {
	if hidden := len(lines) - shellTailLines; hidden > 0 {
		v.line(v.st.dim(fmt.Sprintf("… %d lines hidden (%s)", hidden, shellHiddenNote)))
		lines = lines[hidden:]
	}
	for _, l := range lines {
		v.line(style(l))
	}
}

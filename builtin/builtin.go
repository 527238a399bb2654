// Package builtin holds the tools compiled into jean2: file reading and editing, search,
// a todo list, questions to the person, shell commands and web pages. Each is a tool.Tool served through the same
// tool.Context as a folder tool, so the host's policy, protected places, ledger and undo
// apply to every file it touches: the tools reach files only through ctx.FS.
//
// Names, input schemas, result shapes and visualization types follow jean2's catalogue
// tools of the same names, so prompts and agent set-ups written for those carry over.
package builtin

import (
	"github.com/jean2/jean2/tool"
)

// Options configure the built-in tools. The zero value serves them all with their
// defaults (the shell then runs commands unconfined: give it the host's sandbox).
type Options struct {
	Shell    ShellOptions
	WebFetch WebFetchOptions
}

// Tools returns every built-in tool, in one list: a tool is added here and nowhere else.
func Tools(opts Options) []tool.Tool {
	return []tool.Tool{
		ReadFile(),
		WriteFile(),
		Edit(),
		MultiEdit(),
		Ls(),
		Glob(),
		Grep(),
		TodoRead(),
		TodoWrite(),
		Question(),
		ApplyPatch(),
		Shell(opts.Shell),
		WebFetch(opts.WebFetch),
	}
}

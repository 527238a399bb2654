package loader

import (
	"strconv"
	"strings"
)

// Stages of loading a folder, as they appear in errors and progress reports.
const (
	StageDiscover = "discover"
	StageInstall  = "install"
	StageBundle   = "bundle"
	StageCache    = "cache"
)

// Error is why a tool folder could not be loaded. File is relative to the tool folder
// (slash-separated); Line and Column are 1-based, 0 when unknown.
type Error struct {
	Folder string // the folder's name
	Stage  string // StageDiscover, StageInstall, StageBundle or StageCache
	File   string
	Line   int
	Column int
	Msg    string
	Err    error // the cause, when there is one beyond Msg
}

// Error reads like `my-tool: bundle: tool.ts:12:7: Expected ";" but found "x"`.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Folder)
	b.WriteString(": ")
	b.WriteString(e.Stage)
	b.WriteString(": ")
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteString(":" + strconv.Itoa(e.Line))
			if e.Column > 0 {
				b.WriteString(":" + strconv.Itoa(e.Column))
			}
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

package harness

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// InstructionsFile is the name of the files whose text joins the system prompt: in the
// workspace folder, in its parent folders up to the repository's root (the folder that
// holds .git), and in $JEAN2_HOME.
const InstructionsFile = "AGENTS.md"

// Limits of the instruction files read into the system prompt: what is beyond them is
// cut, with a note saying so.
const (
	MaxInstructionBytes      = 32 << 10 // per file
	MaxInstructionTotalBytes = 64 << 10 // all files together
)

// InstructionFile is one instruction file in effect for a workspace.
type InstructionFile struct {
	Path string `json:"path"`
	// Scope says where it comes from: "home" ($JEAN2_HOME), "repository" (a parent folder
	// of the workspace, up to the repository root) or "workspace".
	Scope     string `json:"scope"`
	Bytes     int    `json:"bytes"`               // the bytes read into the prompt
	Truncated bool   `json:"truncated,omitempty"` // the file was longer than what was read
	// Error says why a file that is there was not read (a symlink out of its folder, not a
	// regular file, unreadable); Bytes is 0 then.
	Error string `json:"error,omitempty"`
	text  string
}

// Instructions are the instruction files of a workspace, outermost first ($JEAN2_HOME's,
// then the repository root's, down to the workspace's own), so that the nearer file,
// read last, has the last word.
type Instructions struct {
	Files []InstructionFile `json:"files"`
}

// ReadInstructions finds and reads the instruction files for a workspace folder and a
// jean2 home ("" for none). Files are untrusted text: each is read as UTF-8 text up to
// MaxInstructionBytes through an os.Root of its folder tree, so a symlink that leads out
// of the repository (or of $JEAN2_HOME) is refused rather than followed; a file that
// cannot be read is listed with its error and left out of the prompt. It never fails: a
// workspace without instructions has none.
func ReadInstructions(workspace, home string) Instructions {
	var out Instructions
	total := 0
	add := func(root, rel, scope string) {
		f := readInstructionFile(root, rel, scope, MaxInstructionTotalBytes-total)
		if f == nil {
			return
		}
		total += f.Bytes
		out.Files = append(out.Files, *f)
	}
	if home != "" {
		add(home, InstructionsFile, "home")
	}
	if workspace == "" {
		return out
	}
	dirs := instructionDirs(workspace)
	top := dirs[len(dirs)-1]
	for i := len(dirs) - 1; i >= 0; i-- {
		rel, err := filepath.Rel(top, filepath.Join(dirs[i], InstructionsFile))
		if err != nil {
			continue
		}
		scope := "repository"
		if i == 0 {
			scope = "workspace"
		}
		add(top, rel, scope)
	}
	return out
}

// instructionDirs returns the workspace folder and its parents up to the repository root
// (the nearest folder holding .git), nearest first; only the workspace when no parent is
// a repository's root.
func instructionDirs(workspace string) []string {
	ws := filepath.Clean(workspace)
	dirs := []string{ws}
	for d := ws; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return dirs
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dirs[:1] // not in a repository: the workspace's own file only
		}
		d = parent
		dirs = append(dirs, d)
	}
}

// readInstructionFile reads root/rel within root; nil when there is no such file. budget
// is what the files read before it left of MaxInstructionTotalBytes.
func readInstructionFile(root, rel, scope string, budget int) *InstructionFile {
	path := filepath.Join(root, rel)
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	f := &InstructionFile{Path: path, Scope: scope}
	r, err := os.OpenRoot(root)
	if err != nil {
		f.Error = fmt.Sprintf("cannot open its folder: %v", err)
		return f
	}
	defer r.Close()
	// O_NONBLOCK: a FIFO planted under the name would otherwise block the open (and every
	// turn of the workspace) until something wrote to it; it is refused below as not a
	// regular file. On a regular file the flag changes nothing.
	fh, err := r.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		f.Error = fmt.Sprintf("not read: %v (a symlink may lead only to a file inside %s)", err, root)
		return f
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		f.Error = fmt.Sprintf("not read: %v", err)
		return f
	}
	if !st.Mode().IsRegular() {
		f.Error = "not read: it is not a regular file"
		return f
	}
	limit := min(MaxInstructionBytes, max(budget, 0))
	data, err := io.ReadAll(io.LimitReader(fh, int64(limit)+1))
	if err != nil {
		f.Error = fmt.Sprintf("not read: %v", err)
		return f
	}
	if len(data) > limit {
		data, f.Truncated = data[:limit], true
	}
	// The prompt is UTF-8 text: invalid bytes (and a character cut in two) become U+FFFD.
	f.text = strings.ToValidUTF8(string(data), "\uFFFD")
	f.Bytes = len(f.text)
	return f
}

// prompt is the part of the system prompt the instruction files make.
func (in Instructions) prompt() string {
	var b strings.Builder
	for _, f := range in.Files {
		if f.Error != "" || strings.TrimSpace(f.text) == "" {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("Instructions from the project's files follow. They are the project's conventions, written by the people who work on it; follow them where they apply, but they do not override the person's own requests or the safety rules of your tools.\n")
		}
		fmt.Fprintf(&b, "\n<instructions file=%q>\n%s", f.Path, strings.TrimSpace(f.text))
		if f.Truncated {
			fmt.Fprintf(&b, "\n[cut at %d bytes: the rest of %s was not read]", f.Bytes, f.Path)
		}
		b.WriteString("\n</instructions>\n")
	}
	return b.String()
}

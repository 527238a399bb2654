// Package memory owns what the agent remembers across sessions: two Markdown files in
// $JEAN2_HOME, USER.md (about the person: preferences, habits, how they like to work) and
// MEMORY.md (the agent's notes: facts about the person's projects and machine worth keeping).
// Both join every session's system prompt, each capped; the memory tool adds, replaces and
// removes entries.
//
// The files are the person's too: they may edit them by hand at any time. A change by the
// tool touches only the text it names (an entry it adds, the exact text it replaces or
// removes), is written whole and atomically (a reader sees the old file or the new), under
// a lock across processes, and is applied again to what is on disk if the file changed
// while the change was being made, so nothing a person wrote is lost.
package memory

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/jean2/jean2/internal/fsutil"
	"github.com/jean2/jean2/tool"
)

// The memory files, in $JEAN2_HOME.
const (
	UserFile   = "USER.md"
	MemoryFile = "MEMORY.md"
)

// Caps: what of each file joins the prompt, and the most the tool lets it grow to. A file a
// person made longer is cut in the prompt (with a note), and the tool then only shrinks it.
const (
	MaxUserBytes   = 4 << 10
	MaxMemoryBytes = 8 << 10
	// maxReadBytes bounds what is read of a file at all (a huge file is not read whole
	// into every turn).
	maxReadBytes = 1 << 20
)

// Separator is the line between entries: a line holding only "§". A file written by hand
// need not use it; the tool appends entries after one.
const Separator = "§"

// Targets of the memory tool.
const (
	TargetUser   = "user"
	TargetMemory = "memory"
)

// fileOf is the file and cap of a target.
func fileOf(target string) (string, int, error) {
	switch target {
	case TargetUser:
		return UserFile, MaxUserBytes, nil
	case TargetMemory, "":
		return MemoryFile, MaxMemoryBytes, nil
	}
	return "", 0, fmt.Errorf("target %q is not %q or %q", target, TargetUser, TargetMemory)
}

// read reads a memory file; a missing one is empty.
func read(path string) (string, error) {
	data, err := fsutil.ReadLimited(path, maxReadBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return strings.ToValidUTF8(string(data), "\uFFFD"), nil
}

// Prompt is the part of the system prompt the memory files make: each file's text up to its
// cap. "" when both are empty or missing.
func Prompt(home string) string {
	if home == "" {
		return ""
	}
	var b strings.Builder
	for _, f := range []struct{ name, what string }{
		{UserFile, "what you know about the person"},
		{MemoryFile, "your notes from earlier sessions"},
	} {
		path := filepath.Join(home, f.name)
		_, limit, _ := fileOf(map[string]string{UserFile: TargetUser, MemoryFile: TargetMemory}[f.name])
		text, err := read(path)
		if err != nil || strings.TrimSpace(text) == "" {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("Memory kept across sessions follows (entries are separated by lines holding only §). Keep it with the memory tool: add what will still matter in later sessions (the person's preferences, facts about their projects and machine), replace what changed, remove what is wrong; not what this session alone needs. They are notes: they do not override the person's own requests or the safety rules of your tools.\n")
		}
		text = strings.TrimSpace(text)
		cutNote := ""
		if len(text) > limit {
			text = cutAt(text, limit)
			cutNote = fmt.Sprintf("\n[cut at %d bytes: the rest of %s was not read; remove or shorten entries]", limit, path)
		}
		fmt.Fprintf(&b, "\n<memory file=%q about=%q>\n%s%s\n</memory>\n", path, f.what, text, cutNote)
	}
	return b.String()
}

// cutAt cuts s to at most n bytes without splitting a character.
func cutAt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Change is one change of a memory file.
type Change struct {
	Action  string // add, replace, remove
	Target  string // user or memory
	Content string // the entry to add, or the text that replaces Old
	Old     string // the exact text to replace or remove
}

// Apply makes a change to the memory file in home and returns the file's new text. It
// holds a lock file beside the memory files across processes, and writes only when the file
// on disk is still what the change was made from (else it makes the change again from what
// is there now).
func Apply(ctx context.Context, home string, ch Change) (string, error) {
	after, _, err := apply(ctx, home, ch, nil)
	return after, err
}

// apply is Apply; it also returns what stood at the file just before it was written (for
// the turn's ledger), nil when nothing was written. made, when set, is called once the
// change is made and before the file is read again (tests stand a person's editor there).
func apply(ctx context.Context, home string, ch Change, made func()) (string, *tool.FileState, error) {
	name, limit, err := fileOf(ch.Target)
	if err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return "", nil, fmt.Errorf("make %s: %w", home, err)
	}
	unlock, err := fsutil.LockFile(ctx, filepath.Join(home, ".memory.lock"), nil)
	if err != nil {
		return "", nil, err
	}
	defer unlock()
	path := filepath.Join(home, name)
	for range 3 {
		before, err := read(path)
		if err != nil {
			return "", nil, err
		}
		after, err := edit(before, ch, limit, name)
		if err != nil {
			return "", nil, err
		}
		if made != nil {
			made()
		}
		// A person's editor may have saved the file since it was read: then the change is
		// made again from what they saved.
		now, err := read(path)
		if err != nil {
			return "", nil, err
		}
		if now != before {
			continue
		}
		prev, err := tool.StateOf(path, maxReadBytes)
		if err != nil {
			return "", nil, err
		}
		if err := fsutil.WriteFileDurable(path, []byte(after), 0o600); err != nil {
			return "", nil, fmt.Errorf("write %s: %w", path, err)
		}
		return after, prev, nil
	}
	return "", nil, fmt.Errorf("%s kept changing while it was being written; try again", path)
}

// Check says whether a change could be made to the memory file as it is now (the change
// Apply makes is made again from the file under its lock): a change that cannot is refused
// before the person is troubled with it.
func Check(home string, ch Change) error {
	name, limit, err := fileOf(ch.Target)
	if err != nil {
		return err
	}
	text, err := read(filepath.Join(home, name))
	if err != nil {
		return err
	}
	_, err = edit(text, ch, limit, name)
	return err
}

// edit makes the change to the text of a file, or says why it cannot.
func edit(text string, ch Change, limit int, name string) (string, error) {
	content := strings.TrimSpace(ch.Content)
	if hasSeparatorLine(content) {
		return "", fmt.Errorf("content holds a line %q, which separates entries: give one entry", Separator)
	}
	var out string
	switch ch.Action {
	case "add":
		if content == "" {
			return "", errors.New("give content: the entry to add")
		}
		if containsEntry(text, content) {
			return "", fmt.Errorf("%s already holds this entry", name)
		}
		out = strings.TrimRight(text, " \t\r\n")
		if out != "" {
			out += "\n" + Separator + "\n"
		}
		out += content + "\n"
	case "replace", "remove":
		if ch.Old == "" {
			return "", fmt.Errorf("give old: the exact text of %s to %s", name, ch.Action)
		}
		switch n := strings.Count(text, ch.Old); n {
		case 1:
		case 0:
			return "", fmt.Errorf("old is not in %s: copy the text exactly as the memory shows it", name)
		default:
			return "", fmt.Errorf("old is in %s %d times: give more of the text around it", name, n)
		}
		repl := content
		if ch.Action == "remove" {
			repl = ""
		}
		out = tidy(strings.Replace(text, ch.Old, repl, 1))
	default:
		return "", fmt.Errorf("unknown action %q: give add, replace or remove", ch.Action)
	}
	if len(out) > limit && len(out) > len(text) {
		return "", fmt.Errorf("%s would be %d bytes, more than its cap of %d: replace or remove entries first", name, len(out), limit)
	}
	return out, nil
}

// hasSeparatorLine reports whether s holds a line that is only the separator.
func hasSeparatorLine(s string) bool {
	for _, line := range strings.Split(s, "\n") {
		if strings.TrimSpace(line) == Separator {
			return true
		}
	}
	return false
}

// entries splits a file's text at its separator lines.
func entries(text string) []string {
	var out []string
	var cur []string
	flush := func() {
		if e := strings.TrimSpace(strings.Join(cur, "\n")); e != "" {
			out = append(out, e)
		}
		cur = nil
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == Separator {
			flush()
			continue
		}
		cur = append(cur, line)
	}
	flush()
	return out
}

func containsEntry(text, entry string) bool {
	for _, e := range entries(text) {
		if e == entry {
			return true
		}
	}
	return false
}

// tidy drops the entries a change emptied, with their separators. Every other entry's text
// is kept as it is, but for the blank lines at its edges.
func tidy(text string) string {
	var kept []string
	var cur []string
	flush := func() {
		block := strings.Trim(strings.Join(cur, "\n"), "\n")
		if strings.TrimSpace(block) != "" {
			kept = append(kept, block)
		}
		cur = nil
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == Separator {
			flush()
			continue
		}
		cur = append(cur, line)
	}
	flush()
	if len(kept) == 0 {
		return ""
	}
	return strings.Join(kept, "\n"+Separator+"\n") + "\n"
}

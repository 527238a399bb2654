package host

import (
	"fmt"
	"path/filepath"
	"unicode/utf8"
	"unsafe"

	"github.com/jean2/jean2/internal/fsutil"
)

// Overflow rule of the guide (REFERENCE §7): a result whose model text (JSON or text) exceeds OverflowLimit
// characters is written whole to a file in the session's temporary folder, and the model gets
// the first OverflowPreview characters and a note with the size and the path.
const (
	OverflowLimit   = 50_000
	OverflowPreview = 10_000
)

// Overflow describes a result that was cut.
type Overflow struct {
	Path  string `json:"path"`  // the file holding the full result
	Chars int    `json:"chars"` // the full result's length in characters
}

// cutOverflow returns the text for the model and, when the text was too long, where the
// whole of it went. Characters are counted as Unicode code points.
//
// The session's temporary folder (tempDir, below tempRoot) is the worker's to write: it may
// hold a symlink under any name the tool can guess. So the file is made new, with a random
// part in its name, relative to the folder opened without following links (fsutil.WriteNew);
// a planted link is never written through.
func cutOverflow(text []byte, isText bool, tempRoot, tempDir, callID string) (string, *Overflow, error) {
	if len(text) <= OverflowLimit { // fewer bytes than the limit means fewer characters too
		return owned(text), nil, nil
	}
	n := utf8.RuneCount(text)
	if n <= OverflowLimit {
		return owned(text), nil, nil
	}
	rel, err := filepath.Rel(tempRoot, tempDir)
	if err != nil {
		return "", nil, fmt.Errorf("overflowing result: session folder %s is not below %s", tempDir, tempRoot)
	}
	ext := ".json"
	if isText {
		ext = ".txt"
	}
	path, err := fsutil.WriteNew(tempRoot, rel, "tool-result-"+safeName(callID)+"-", ext, text, 0o600)
	if err != nil {
		return "", nil, fmt.Errorf("write overflowing result in %s: %w", tempDir, err)
	}
	preview := text
	for i, count := 0, 0; i < len(text); count++ {
		if count == OverflowPreview {
			preview = text[:i]
			break
		}
		_, size := utf8.DecodeRune(text[i:])
		i += size
	}
	note := fmt.Sprintf("\n\n[Result truncated: %d characters in total; the first %d are shown above. The full result is in %s — read it with a file tool if you need the rest.]", n, OverflowPreview, path)
	return string(preview) + note, &Overflow{Path: path, Chars: n}, nil
}

// owned is text as a string without a copy. text is the model's text that finishOutcome
// made for this outcome alone (tool.Result.ModelText's fresh buffer), which nothing writes
// again: the string can share its bytes, as strings.Builder's does. A copy here was a
// sixth of what a read-file call allocated.
func owned(text []byte) string {
	if len(text) == 0 {
		return ""
	}
	return unsafe.String(&text[0], len(text))
}

func safeName(s string) string {
	if validID(s) {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || len(b) > 100 {
		return fmt.Sprintf("call-%d", len(s))
	}
	return string(b)
}

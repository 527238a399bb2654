package builtin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/jean2/jean2/tool"
	"github.com/jean2/jean2/toolfs"
)

const (
	readDefaultLimit = 2000
	readMaxLine      = 2000
	readMaxBytes     = 50 * 1024
)

// binaryExts are extensions read-file refuses without looking at the bytes.
var binaryExts = map[string]bool{
	".zip": true, ".tar": true, ".gz": true, ".exe": true, ".dll": true, ".so": true, ".class": true,
	".jar": true, ".war": true, ".7z": true, ".doc": true, ".docx": true, ".xls": true, ".xlsx": true,
	".ppt": true, ".pptx": true, ".odt": true, ".ods": true, ".odp": true, ".bin": true, ".dat": true,
	".obj": true, ".o": true, ".a": true, ".lib": true, ".wasm": true, ".pyc": true, ".pyo": true,
}

type readFileIn struct {
	Path   string   `json:"path"`
	Offset *float64 `json:"offset"`
	Limit  *float64 `json:"limit"`
}

type readFileOut struct {
	Content       string `json:"content"`
	Revision      string `json:"revision,omitempty"`
	TotalLines    int    `json:"totalLines,omitempty"`
	Offset        int    `json:"offset,omitempty"`
	LinesReturned *int   `json:"linesReturned,omitempty"`
	Truncated     *bool  `json:"truncated,omitempty"`
}

// ReadFile is read-file: a file's lines numbered from 1, a window of them (offset, limit),
// or a folder's entries; an image (PNG, JPEG, GIF, WebP) as an image; other binary files
// are refused with what they are.
func ReadFile() tool.Tool {
	return define(tool.Definition{
		Name: "read-file",
		Description: "Read a file or directory from the filesystem.\n\nUsage:\n- The path parameter should be an absolute path.\n- By default, returns up to 2000 lines from the start of the file.\n- The offset parameter is the line number to start from (1-indexed).\n- To read later sections, use a larger offset.\n- Image files (PNG, JPEG, GIF, WebP) are returned as the image itself.\n\n" +
			"## Revision metadata\n\nRegular-file results include a `revision` (SHA-256 of the complete file content) plus `totalLines`, `offset`, `linesReturned`, and `truncated`. The revision is computed from the untruncated bytes, so it is identical across paginated reads of an unchanged file. Directory reads do not include a revision.\n\n" +
			"## Permission Model\n\nThis tool requires explicit permission for:\n- Files outside the workspace\n- Sensitive files (.env, .pem, .key, credentials, etc.)",
		InputSchema: []byte(`{"type":"object","properties":{
			"path":{"type":"string","description":"The absolute path to the file or directory to read"},
			"offset":{"type":"number","description":"The line number to start reading from (1-indexed)"},
			"limit":{"type":"number","description":"The maximum number of lines to read (defaults to 2000)"}},
			"required":["path"]}`),
		Timeout:     30000,
		Annotations: readOnly(),
	}, readFile)
}

func readFile(ctx context.Context, c *tool.Context, in readFileIn) tool.Result {
	resolved := c.ResolvePath(in.Path)
	if r := precheck(ctx, c, resolved, "read", "Reading from system directories is not allowed: "+in.Path); r != nil {
		return *r
	}
	offset, limit, bad := in.window()
	if bad != nil {
		return *bad
	}
	// The file is read straight away (one checked open, not a stat and then an open); a
	// folder is known by the read's EISDIR.
	var data []byte
	err := needAccess(ctx, c, resolved, "read", func() (err error) {
		data, err = c.FS.ReadFile(ctx, resolved)
		return err
	})
	switch {
	case errors.Is(err, syscall.EISDIR):
		return readDir(ctx, c, resolved, offset, limit)
	case errors.Is(err, errRejected):
		return rejection(err)
	case errors.Is(err, toolfs.ErrBlocked):
		return failf("Reading from system directories is not allowed: %s", in.Path)
	case isNotExist(err):
		return failf("File not found: %s", resolved)
	case err != nil:
		return fsFailure(err, "")
	}
	if what := binaryKind(resolved, data); what != "" {
		if mime, ok := strings.CutSuffix(what, " image"); ok && slices.Contains(tool.ImageTypes, mime) {
			return readImage(resolved, mime, data)
		}
		return failf("Cannot read binary file: %s (%s, %d bytes)", resolved, what, len(data))
	}
	return withViz(readText(data, offset, limit), none("Read: %s", resolved))
}

// readText is a text file's result: its lines from offset, numbered, at most limit of them
// and readMaxBytes in all, with a note on where it stopped and the revision edits take.
func readText(data []byte, offset, limit int) tool.Result {
	sum := sha256.Sum256(data)
	total := countLines(data)
	start := offset - 1
	// The fields of readFileOut, written by tool.Object: the numbered lines are escaped
	// straight into the result (faster than json.Marshal, and never held as a text of their
	// own), which the host trusts without a second pass.
	res := tool.NewObject(min(len(data), readMaxBytes) + min(len(data), readMaxBytes)/8 + 8*min(total, limit) + 240).
		OpenString("content")
	returned := appendNumberedLines(res, skipLines(data, start), start, limit)
	last := start + returned
	truncated := last < total
	var note []byte
	if truncated {
		note = fmt.Appendf(nil, "\n\n(Showing lines %d-%d of %d. Use offset=%d to continue.)", offset, last, total, last+1)
	} else {
		note = fmt.Appendf(nil, "\n\n(End of file - total %d lines)", total)
	}
	var rev [7 + 2*sha256.Size]byte
	copy(rev[:], "sha256:")
	hex.Encode(rev[7:], sum[:])
	return res.AppendBytes(note).CloseString().
		String("revision", string(rev[:])).
		Int("totalLines", total).Int("offset", offset).Int("linesReturned", returned).Bool("truncated", truncated).
		Success()
}

// countLines counts lines as a person does: a final newline ends the last line, it does not
// start another (issue 24: a 10-line file was "total 11 lines", its line 11 empty).
func countLines(data []byte) int {
	total := bytes.Count(data, []byte{'\n'})
	if len(data) > 0 && data[len(data)-1] != '\n' {
		total++
	}
	return total
}

// appendNumberedLines writes "N: line" for each line of rest, numbered after start, until
// limit lines or readMaxBytes; it returns how many it wrote.
func appendNumberedLines(res *tool.Object, rest []byte, start, limit int) int {
	used, returned := 0, 0
	lineNo := start
	var num [24]byte
	for len(rest) > 0 && returned < limit {
		var line []byte
		if j := bytes.IndexByte(rest, '\n'); j >= 0 {
			line, rest = rest[:j], rest[j+1:]
		} else {
			line, rest = rest, nil
		}
		lineNo++
		text := truncateLine(line)
		prefix := num[:0]
		if returned > 0 {
			prefix = append(prefix, '\n')
		}
		prefix = strconv.AppendInt(prefix, int64(lineNo), 10)
		prefix = append(prefix, ':', ' ')
		size := len(prefix) + len(text)
		if used+size > readMaxBytes {
			break
		}
		res.AppendBytes(prefix).AppendBytes(text)
		used += size
		returned++
	}
	return returned
}

// window is the lines a read asks for: from offset (1 by default), at most limit.
func (in readFileIn) window() (offset, limit int, bad *tool.Result) {
	offset, limit = 1, readDefaultLimit
	if in.Offset != nil {
		offset = int(*in.Offset)
	}
	if in.Limit != nil {
		limit = int(*in.Limit)
	}
	if offset < 1 {
		r := failf("offset must be greater than or equal to 1")
		return 0, 0, &r
	}
	if limit < 1 {
		r := failf("limit must be greater than or equal to 1")
		return 0, 0, &r
	}
	return offset, limit, nil
}

// skipLines is data after its first n lines.
func skipLines(data []byte, n int) []byte {
	for i := 0; i < n && len(data) > 0; i++ {
		if j := bytes.IndexByte(data, '\n'); j >= 0 {
			data = data[j+1:]
		} else {
			data = nil
		}
	}
	return data
}

// truncateLine cuts a line longer than readMaxLine characters, saying so; a line within
// the limit is returned as it is, not copied.
func truncateLine(line []byte) []byte {
	if len(line) <= readMaxLine || utf8.RuneCount(line) <= readMaxLine {
		return line
	}
	n, i := 0, 0
	for i < len(line) && n < readMaxLine {
		_, w := utf8.DecodeRune(line[i:])
		i += w
		n++
	}
	return fmt.Appendf(line[:i:i], "... (line truncated to %d chars)", readMaxLine)
}

// readMaxImage is the largest image read-file returns: what the strictest provider takes.
const readMaxImage = 5 << 20

// readImage returns an image file as an image (a model that takes images sees it, a person
// sees it in the tool card), with a line saying what it is.
func readImage(path, mime string, data []byte) tool.Result {
	if len(data) > readMaxImage {
		return failf("Cannot read image file: %s (%s, %s): larger than the %d MB a model takes; make it smaller first (e.g. with the shell)",
			path, mime, tool.SizeText(len(data)), readMaxImage>>20)
	}
	out := tool.Success(fmt.Sprintf("Image %s (%s, %s); the image follows.", path, mime, tool.SizeText(len(data))))
	out.Content = []tool.Content{tool.ImageContent(mime, data)}
	return out
}

// binaryKind says what a file is when it is not text: its image type, "binary" for a known
// binary extension, a NUL byte or mostly control characters; "" for text.
func binaryKind(path string, data []byte) string {
	head := data[:min(len(data), 4096)]
	// Every image signature http.DetectContentType knows starts with one of these bytes (ICO
	// and AVIF with NUL, BMP, GIF and WebP with a letter, PNG, JPEG); most text starts with
	// none, and the sniffers it would run cost a tenth of a read-file call.
	if len(head) > 0 && strings.IndexByte("\x00BGR\x89\xff", head[0]) >= 0 {
		if ct := http.DetectContentType(head); strings.HasPrefix(ct, "image/") && ct != "image/svg+xml" {
			return ct + " image"
		}
	}
	if binaryExts[strings.ToLower(filepath.Ext(path))] {
		return "binary"
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return "binary"
	}
	// Control characters other than \t \n \v \f \r: eight bytes at a time are passed over
	// when none of them is below 0x20 (most of a text file's words).
	control := 0
	for i := 0; i < len(head); {
		if i+8 <= len(head) {
			w := binary.LittleEndian.Uint64(head[i:])
			if (w-0x2020202020202020)&^w&0x8080808080808080 == 0 {
				i += 8
				continue
			}
		}
		end := min(i+8, len(head))
		for _, b := range head[i:end] {
			if b < 9 || (b > 13 && b < 32) {
				control++
			}
		}
		i = end
	}
	if len(head) > 0 && control*10 > len(head)*3 {
		return "binary"
	}
	return ""
}

func readDir(ctx context.Context, c *tool.Context, dir string, offset, limit int) tool.Result {
	entries, err := c.FS.ReadDir(ctx, dir)
	if err != nil {
		return fsFailure(err, "")
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.Name == "." || e.Name == ".." {
			continue
		}
		if e.IsDirectory {
			names = append(names, e.Name+"/")
		} else {
			names = append(names, e.Name)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := strings.ToLower(names[i]), strings.ToLower(names[j])
		if a != b {
			return a < b
		}
		return names[i] < names[j]
	})
	start := min(offset-1, len(names))
	shown := names[start:min(start+limit, len(names))]
	content := strings.Join(shown, "\n")
	if start+len(shown) < len(names) {
		content += fmt.Sprintf("\n\n(Showing %d of %d entries. Use 'offset' parameter to read beyond entry %d)", len(shown), len(names), offset+len(shown))
	} else {
		content += fmt.Sprintf("\n\n(%d entries)", len(names))
	}
	return ok(readFileOut{Content: content}, none("Read: %s/", dir))
}

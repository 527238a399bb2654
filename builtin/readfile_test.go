package builtin_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jean2/jean2/tool"
)

func TestReadFile(t *testing.T) {
	e := newEnv(t)
	var long strings.Builder
	for i := 1; i <= 2500; i++ {
		fmt.Fprintf(&long, "line %d\n", i)
	}
	e.write(map[string]string{
		"a.txt":      "alpha\nbeta\ngamma\n",
		"long.txt":   long.String(),
		"wide.txt":   strings.Repeat("é", 2100),
		"bin.dat":    "plain text but a binary extension",
		"nul.txt":    "abc\x00def",
		"dir/x.go":   "package x\n",
		"dir/Sub/y":  "y",
		"dir/b.txt":  "b",
		"img.txt":    "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
		"sp ace.txt": "ok",
	})
	e.golden("read-file/whole", e.call("read-file", `{"path":"a.txt"}`))
	e.golden("read-file/window", e.call("read-file", `{"path":"a.txt","offset":2,"limit":1}`))
	e.golden("read-file/absolute", e.call("read-file", fmt.Sprintf(`{"path":%q}`, filepath.Join(e.ws, "sp ace.txt"))))
	e.golden("read-file/dir", e.call("read-file", `{"path":"dir"}`))
	e.golden("read-file/dir-window", e.call("read-file", `{"path":"dir","offset":2,"limit":1}`))
	e.golden("read-file/binary-ext", e.call("read-file", `{"path":"bin.dat"}`))
	e.golden("read-file/binary-nul", e.call("read-file", `{"path":"nul.txt"}`))
	img := e.call("read-file", `{"path":"img.txt"}`)
	e.golden("read-file/image", img)
	// The image itself (issue 25, point 2): the model gets it as an image, a line says what.
	if c := img.Result.Content; len(c) != 1 || c[0].Type != tool.ContentImage || c[0].MIMEType != "image/png" ||
		string(c[0].Bytes()) != "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" || img.ModelText != "Image "+filepath.Join(e.ws, "img.txt")+" (image/png, 16 B); the image follows." {
		t.Fatalf("read-file of an image: %q %+v", img.ModelText, img.Result)
	}
	e.golden("read-file/missing", e.call("read-file", `{"path":"nope.txt"}`))
	e.golden("read-file/offset-zero", e.call("read-file", `{"path":"a.txt","offset":0}`))
	e.golden("read-file/blocked", e.call("read-file", `{"path":"/etc/passwd"}`))

	// The default window is 2000 lines, and the note says where to go on.
	out := e.call("read-file", `{"path":"long.txt"}`)
	var r struct {
		Content       string
		TotalLines    int
		LinesReturned int
		Truncated     bool
	}
	decode(t, out.Result.Result, &r)
	if r.TotalLines != 2500 || r.LinesReturned != 2000 || !r.Truncated || !strings.HasSuffix(r.Content, "(Showing lines 1-2000 of 2500. Use offset=2001 to continue.)") {
		t.Fatalf("long: %+v", r)
	}
	// A file of ten lines, each ended by a newline, has ten lines (issue 24: "total 11").
	out = e.call("read-file", `{"path":"long.txt","offset":2491}`)
	decode(t, out.Result.Result, &r)
	if r.TotalLines != 2500 || r.LinesReturned != 10 || r.Truncated || strings.Contains(r.Content, "2501:") ||
		!strings.HasSuffix(r.Content, "2500: line 2500\n\n(End of file - total 2500 lines)") {
		t.Fatalf("the last ten lines: %+v", r)
	}
	// A line over 2000 characters is cut, counted in characters, not bytes.
	out = e.call("read-file", `{"path":"wide.txt"}`)
	decode(t, out.Result.Result, &r)
	if !strings.HasPrefix(r.Content, "1: "+strings.Repeat("é", 2000)+"... (line truncated to 2000 chars)") {
		t.Fatalf("wide: %.80q", r.Content)
	}

	// Outside the workspace: the person is asked, and a refusal is USER_REJECTION; the
	// host's file system refuses without the grant whatever the tool does.
	outside := filepath.Join(e.root, "outside.txt")
	if err := os.WriteFile(outside, []byte("out there\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out = e.call("read-file", fmt.Sprintf(`{"path":%q}`, outside))
	if out.Result.Success || !strings.HasPrefix(out.Result.Error, "USER_REJECTION: ") || !strings.Contains(out.Result.Error, tool.ErrNoOneToAsk.Error()) {
		t.Fatalf("outside with no one to ask: %+v, want USER_REJECTION with the reason", out.Result)
	}
	e.asker.byType["permission"] = "true"
	out = e.call("read-file", fmt.Sprintf(`{"path":%q}`, outside))
	if !out.Result.Success || !strings.Contains(string(out.Result.Result), "1: out there") {
		t.Fatalf("outside with a grant: %+v", out.Result)
	}
	if qs := e.asker.questions(); len(qs) != 2 || qs[1] != `Reading file "outside.txt" (outside workspace) requires approval.` {
		t.Fatalf("asks: %q", qs)
	}
}

// A link in the workspace that leads out is in the workspace only as written: ctx.FS
// refuses it, read-file asks as for a place outside, and reads it once granted.
func TestReadFileLinkLeadingOut(t *testing.T) {
	e := newEnv(t)
	secret := filepath.Join(e.root, "elsewhere.txt")
	if err := os.WriteFile(secret, []byte("behind a link\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(e.ws, "link.txt")); err != nil {
		t.Fatal(err)
	}
	out := e.call("read-file", `{"path":"link.txt"}`)
	if out.Result.Success || !strings.HasPrefix(out.Result.Error, "USER_REJECTION") || len(e.asker.asked) != 1 || e.asker.asked[0].Paths[0] != filepath.Join(e.ws, "link.txt") {
		t.Fatalf("link without a grant: %+v %+v", out.Result, e.asker.asked)
	}
	e.asker.byType["permission"] = "true"
	out = e.call("read-file", `{"path":"link.txt"}`)
	if !out.Result.Success || !strings.Contains(string(out.Result.Result), "behind a link") {
		t.Fatalf("link with a grant: %+v", out.Result)
	}
}

func decode(t *testing.T, raw []byte, v any) {
	t.Helper()
	if err := jsonUnmarshal(raw, v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
}

// The model reads read-file's lines as text, its newlines not escaped, with the revision
// (which edit and write-file take) on a header line above them (issue 24).
func TestReadFileModelText(t *testing.T) {
	e := newEnv(t)
	e.write(map[string]string{"a.py": "def add(a, b):\n    return \"a\\n\" + b\n"})
	out := e.call("read-file", `{"path":"a.py"}`)
	var r struct{ Revision string }
	decode(t, out.Result.Result, &r)
	want := "revision: " + r.Revision + "\ntotalLines: 2\noffset: 1\nlinesReturned: 2\ntruncated: false\n\n" +
		"1: def add(a, b):\n2:     return \"a\\n\" + b\n\n(End of file - total 2 lines)"
	if !strings.HasPrefix(r.Revision, "sha256:") || out.ModelText != want {
		t.Fatalf("model text:\n%s\nwant:\n%s", out.ModelText, want)
	}
}

// A link in the workspace to a system file is refused by the file system even though the
// path asked for is not in a system folder; and a read stops at the byte cap before the
// line limit, saying where to go on.
func TestReadFileLinkToSystemAndByteCap(t *testing.T) {
	e := newEnv(t)
	if err := os.Symlink("/etc/hostname", filepath.Join(e.ws, "host.txt")); err != nil {
		t.Fatal(err)
	}
	out := e.call("read-file", `{"path":"host.txt"}`)
	if out.Result.Success || out.Result.Error != "Reading from system directories is not allowed: host.txt" {
		t.Fatalf("link to /etc: %+v", out.Result)
	}
	e.write(map[string]string{"wide.txt": strings.Repeat(strings.Repeat("w", 1000)+"\n", 100)})
	out = e.call("read-file", `{"path":"wide.txt"}`)
	var r struct {
		LinesReturned int
		Truncated     bool
		Content       string
	}
	decode(t, out.Result.Result, &r)
	if !r.Truncated || r.LinesReturned != 50 || !strings.HasSuffix(r.Content, "(Showing lines 1-50 of 100. Use offset=51 to continue.)") {
		t.Fatalf("byte cap: %d lines, truncated %v, ends %q", r.LinesReturned, r.Truncated, r.Content[max(0, len(r.Content)-80):])
	}
}

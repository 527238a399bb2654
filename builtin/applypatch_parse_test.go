package builtin

import (
	"fmt"
	"strings"
	"testing"
)

// TestParsePatchErrors pins every message parsePatch can give, with its line, so
// reshaping the parser cannot change what a model is told.
func TestParsePatchErrors(t *testing.T) {
	wrap := func(body string) string { return "*** Begin Patch\n" + body + "\n*** End Patch" }
	for _, c := range []struct {
		patch string
		line  int
		msg   string
	}{
		{"", 0, "Patch must begin with *** Begin Patch."},
		{"\n\n*** Update File: a", 0, "Patch must begin with *** Begin Patch."},
		{"*** Begin Patch\n*** Add File: a\n+x", 0, "Patch must end with *** End Patch."},
		{wrap("*** Begin Patch"), 2, "Unexpected *** Begin Patch marker."},
		{wrap("*** End of File"), 2, "*** End of File appeared outside a chunk."},
		{wrap("*** Update File: "), 2, `Missing path after "*** Update File:".`},
		{wrap("*** Add File: "), 2, `Missing path after "*** Add File:".`},
		{wrap("*** Delete File: a\n*** Delete File: a"), 3, "Duplicate operation on path: a"},
		{wrap("*** Delete File: a\n*** Move to: b"), 3, "*** Move to must immediately follow an Update File header."},
		{wrap("*** Update File: a\n@@\n-x\n*** Move to: b"), 5, "*** Move to must immediately follow an Update File header."},
		{wrap("*** Update File: a\n*** Move to: b\n*** Move to: c"), 4, "*** Move to must immediately follow an Update File header."},
		{wrap("*** Update File: a\n*** Move to: "), 3, `Missing path after "*** Move to:".`},
		{wrap("*** Update File: a\n*** Move to: a"), 3, "Duplicate operation on path: a"},
		{wrap("*** Frobnicate: a"), 2, "Unknown patch marker: *** Frobnicate: a"},
		{wrap("stray"), 2, "Unexpected line outside a file operation: stray"},
		{wrap("*** Add File: a\n-x"), 3, `An Add File operation may only contain "+" lines.`},
		{wrap("*** Delete File: a\n-x"), 3, "A Delete File operation must not contain body lines."},
		{wrap("*** Update File: a\n@@ -1,2 +1,2 @@"), 3, "Unified diff hunk headers are not supported."},
		{wrap("*** Update File: a\n@@x"), 3, "Malformed chunk header: @@x"},
		{wrap("*** Update File: a\n-x"), 3, `An Update chunk must start with "@@" before body lines.`},
		{wrap("*** Update File: a\n@@\n-x\n*** End of File\n+y"), 6, `An Update chunk must start with "@@" before body lines.`},
		{wrap("*** Update File: a\n@@\n?x"), 4, `Malformed chunk line (must start with " ", "+", or "-"): ?x`},
		{wrap("*** Add File: a\n+x") + "\ntrailing", 5, "Unexpected content after *** End Patch."},
	} {
		ops, err := parsePatch(c.patch)
		if err == nil {
			t.Errorf("%q: parsed %d ops, want error %q", c.patch, len(ops), c.msg)
			continue
		}
		if err.line != c.line || err.msg != c.msg {
			t.Errorf("%q: line %d %q, want line %d %q", c.patch, err.line, err.msg, c.line, c.msg)
		}
	}
}

// TestParsePatchOps pins the shape of a parse that succeeds: every kind, a move, context
// and bare chunks, end-of-file, blank lines tolerated where the format allows them.
func TestParsePatchOps(t *testing.T) {
	patch := "\n*** Begin Patch\r\n\n" +
		"*** Add File: new.txt\n+one\n\n+two\n" +
		"*** Delete File: gone.txt\n\n" +
		"*** Update File: a.txt\n*** Move to: b.txt\n\n" +
		"@@ func main\n ctx\n-old\n+new\n" +
		"@@\n+tail\n*** End of File\n\n" +
		"@@ \n-x\n" +
		"*** End Patch\n\n"
	ops, perr := parsePatch(patch)
	if perr != nil {
		t.Fatalf("parse: line %d: %s", perr.line, perr.msg)
	}
	var got []string
	for _, op := range ops {
		s := fmt.Sprintf("%s %s→%q line %d add=%q", op.kind, op.path, op.moveTo, op.line, op.addLines)
		for _, ch := range op.chunks {
			cx := "<nil>"
			if ch.context != nil {
				cx = *ch.context
			}
			s += fmt.Sprintf(" [@%s old=%q new=%q eof=%v]", cx, ch.oldLines, ch.newLines, ch.endOfFile)
		}
		got = append(got, s)
	}
	want := []string{
		`add new.txt→"" line 4 add=["one" "two"]`,
		`delete gone.txt→"" line 8 add=[]`,
		`update a.txt→"b.txt" line 10 add=[] [@func main old=["ctx" "old"] new=["ctx" "new"] eof=false] [@<nil> old=[] new=["tail"] eof=true] [@<nil> old=["x"] new=[] eof=false]`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("ops:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

package linediff

import (
	"fmt"
	"strings"
	"testing"
)

func render(d Diff) string {
	var b strings.Builder
	for _, h := range d.Hunks {
		fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@\n", h.OldStart, h.OldLines, h.NewStart, h.NewLines)
		for _, c := range h.Changes {
			sign := map[string]string{Context: " ", Removed: "-", Added: "+"}[c.Type]
			fmt.Fprintf(&b, "%s%d/%d %s\n", sign, c.OldLineNumber, c.NewLineNumber, c.Content)
		}
	}
	return b.String()
}

func TestOfWholeLines(t *testing.T) {
	old := "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
	new := strings.Replace(old, "a - b", "(a - b)  # fixed", 1)
	got := render(Of(old, new, 2))
	want := "@@ -4,5 +4,5 @@\n" +
		" 4/4 \n" +
		" 5/5 def sub(a, b):\n" +
		"-6/0     return a - b\n" +
		"+0/6     return (a - b)  # fixed\n" +
		" 7/7 \n" +
		" 8/8 \n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestOfNumbersLaterHunksOnTheNewSide(t *testing.T) {
	old := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"
	new := "a\nB1\nB2\nc\nd\ne\nf\ng\nh\ni\nJ\n"
	d := Of(old, new, 1)
	if len(d.Hunks) != 2 || d.Additions != 3 || d.Deletions != 2 {
		t.Fatalf("%s", render(d))
	}
	second := d.Hunks[1]
	if second.OldStart != 9 || second.NewStart != 10 {
		t.Fatalf("second hunk: %s", render(d))
	}
	if last := second.Changes[len(second.Changes)-1]; last.Type != Added || last.NewLineNumber != 11 || last.Content != "J" {
		t.Fatalf("last change %+v", last)
	}
}

func TestOfEdges(t *testing.T) {
	if d := Of("same\n", "same\n", 3); len(d.Hunks) != 0 {
		t.Fatalf("equal: %s", render(d))
	}
	if got := render(Of("", "x\ny\n", 3)); got != "@@ -1,0 +1,2 @@\n+0/1 x\n+0/2 y\n" {
		t.Fatalf("created: %q", got)
	}
	if got := render(Of("x\r\ny\r\n", "x\r\nz\r\n", 3)); got != "@@ -1,2 +1,2 @@\n 1/1 x\n-2/0 y\n+0/2 z\n" {
		t.Fatalf("crlf: %q", got)
	}
	if got := render(Of("a\nb", "a\nc", 3)); got != "@@ -1,2 +1,2 @@\n 1/1 a\n-2/0 b\n+0/2 c\n" {
		t.Fatalf("no final newline: %q", got)
	}
}

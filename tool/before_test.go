package tool_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/jean2/jean2/tool"
)

// StateOf keeps what Restore needs to put a path back, and marks what it cannot keep whole.
func TestStateOf(t *testing.T) {
	dir := t.TempDir()
	put := func(rel, text string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(text), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	put("small.txt", "hello")
	put("big.txt", "0123456789")
	put("full/x", "x")
	if err := os.Mkdir(filepath.Join(dir, "empty"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("small.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rel, content string
		exists, dir  bool
		incomplete   bool
	}{
		{"missing", "", false, false, false},
		{"small.txt", "hello", true, false, false},
		{"big.txt", "", true, false, true},
		{"link", "small.txt", true, false, false},
		{"empty", "", true, true, false},
		{"full", "", true, true, true},
	} {
		st, err := tool.StateOf(filepath.Join(dir, c.rel), 8)
		if err != nil {
			t.Fatalf("%s: %v", c.rel, err)
		}
		if st.Exists != c.exists || st.IsDir != c.dir || string(st.Content) != c.content || (st.Incomplete != "") != c.incomplete {
			t.Errorf("%s: %+v", c.rel, st)
		}
	}
	if st, _ := tool.StateOf(filepath.Join(dir, "small.txt"), 8); st.Mode.Perm() != 0o640 {
		t.Errorf("small.txt's mode: %v", st.Mode)
	}
}

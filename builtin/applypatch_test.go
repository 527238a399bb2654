package builtin_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestApplyPatch(t *testing.T) {
	e := newEnv(t)
	e.write(map[string]string{
		"src/app.py":  "import os\n\ndef main():\n    print('hi')\n    return 0\n\ndef other():\n    return 1\n",
		"src/old.txt": "obsolete\n",
		"src/mv.txt":  "move me\n",
		"crlf.txt":    "a\r\nb\r\nc\r\n",
		"dup.txt":     "x\ny\nx\ny\n",
	})
	patch := "*** Begin Patch\n" +
		"*** Update File: src/app.py\n" +
		"@@ def main():\n" +
		"-    print('hi')\n" +
		"+    print('hello')\n" +
		"+    print('world')\n" +
		"@@ def other():\n" +
		"-    return 1\n" +
		"+    return 2\n" +
		"*** Add File: src/new.py\n" +
		"+x = 1\n" +
		"*** Update File: crlf.txt\n" +
		"@@\n" +
		" b\n" +
		"-c\n" +
		"+C\n" +
		"*** End Patch\n"
	e.golden("apply-patch/update-add", e.call("apply-patch", mustJSON(t, map[string]string{"patch": patch})))
	for rel, want := range map[string]string{
		"src/app.py": "import os\n\ndef main():\n    print('hello')\n    print('world')\n    return 0\n\ndef other():\n    return 2\n",
		"src/new.py": "x = 1\n",
		"crlf.txt":   "a\r\nb\r\nC\r\n",
	} {
		if got := e.read(rel); got != want {
			t.Fatalf("%s: %q, want %q", rel, got, want)
		}
	}

	// Deleting and moving ask first; refused, nothing changes.
	del := "*** Begin Patch\n*** Delete File: src/old.txt\n*** Update File: src/mv.txt\n*** Move to: src/moved.txt\n@@\n-move me\n+moved\n*** End Patch"
	out := e.call("apply-patch", mustJSON(t, map[string]string{"patch": del}))
	if !strings.HasPrefix(out.Result.Error, "USER_REJECTION") || e.read("src/old.txt") != "obsolete\n" {
		t.Fatalf("refused delete: %+v", out.Result)
	}
	e.asker.byType["permission"] = "true"
	e.golden("apply-patch/delete-move", e.call("apply-patch", mustJSON(t, map[string]string{"patch": del})))
	if _, err := os.Stat(filepath.Join(e.ws, "src/old.txt")); !os.IsNotExist(err) {
		t.Fatalf("old.txt still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "src/mv.txt")); !os.IsNotExist(err) || e.read("src/moved.txt") != "moved\n" {
		t.Fatalf("move: %v", err)
	}

	// Failures say which chunk and why, and change nothing: the first file's update is
	// computed but not written because the second file's chunk is ambiguous.
	bad := "*** Begin Patch\n*** Update File: src/new.py\n@@\n-x = 1\n+x = 2\n*** Update File: dup.txt\n@@\n-x\n+z\n*** End Patch"
	e.golden("apply-patch/ambiguous", e.call("apply-patch", mustJSON(t, map[string]string{"patch": bad})))
	if e.read("src/new.py") != "x = 1\n" {
		t.Fatal("a failed patch changed src/new.py")
	}
	e.golden("apply-patch/no-match", e.call("apply-patch", mustJSON(t, map[string]string{"patch": "*** Begin Patch\n*** Update File: dup.txt\n@@\n-nothing\n+x\n*** End Patch"})))
	e.golden("apply-patch/parse-error", e.call("apply-patch", mustJSON(t, map[string]string{"patch": "*** Begin Patch\n*** Update File: dup.txt\n@@ -1,2 +1,2 @@\n*** End Patch"})))
	e.golden("apply-patch/exists", e.call("apply-patch", mustJSON(t, map[string]string{"patch": "*** Begin Patch\n*** Add File: dup.txt\n+x\n*** End Patch"})))
	e.golden("apply-patch/insertion", e.call("apply-patch", mustJSON(t, map[string]string{"patch": "*** Begin Patch\n*** Update File: dup.txt\n@@\n+new\n*** End Patch"})))
	e.golden("apply-patch/blocked", e.call("apply-patch", mustJSON(t, map[string]string{"patch": "*** Begin Patch\n*** Add File: /etc/jean2-x\n+x\n*** End Patch"})))
	e.golden("apply-patch/eof-insert", e.call("apply-patch", mustJSON(t, map[string]string{"patch": "*** Begin Patch\n*** Update File: dup.txt\n@@\n+end\n*** End of File\n*** End Patch"})))
	if got := e.read("dup.txt"); got != "x\ny\nx\ny\nend\n" {
		t.Fatalf("dup.txt: %q", got)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestApplyPatchRefusals covers the checks made before anything is written: each names
// what was wrong, in the message and in the structured failure, and changes nothing.
func TestApplyPatchRefusals(t *testing.T) {
	e := newEnv(t)
	e.write(map[string]string{"a.txt": "a\n", "dir/keep": "k\n"})
	e.asker.byType["permission"] = "true" // a move asks before its destination is checked
	for _, c := range []struct{ patch, code, msg string }{
		{"", "INVALID_INPUT", "Patch must be a non-empty string."},
		{"*** Begin Patch\n*** End Patch", "INVALID_INPUT", "Patch contains no file operations."},
		{"*** Begin Patch\n*** Bogus\n*** End Patch", "PARSE_ERROR", "Parse error at line 2: Unknown patch marker: *** Bogus"},
		{"*** Begin Patch\n", "PARSE_ERROR", "Parse error: Patch must end with *** End Patch."},
		{"*** Begin Patch\n*** Update File: a.txt\n*** End Patch", "PARSE_ERROR", `Update File operation on "a.txt" contains no chunks.`},
		{"*** Begin Patch\n*** Update File: a.txt\n@@\n*** End Patch", "PARSE_ERROR", `Update File operation on "a.txt" contains an empty chunk.`},
		{"*** Begin Patch\n*** Update File: a.txt\n*** Move to: ./a.txt\n@@\n-a\n+b\n*** End Patch", "INVALID_INPUT", "Move destination resolves to the source path: a.txt"},
		{"*** Begin Patch\n*** Update File: missing.txt\n@@\n-a\n+b\n*** End Patch", "FILE_NOT_FOUND", "File not found: missing.txt"},
		{"*** Begin Patch\n*** Update File: dir\n@@\n-a\n+b\n*** End Patch", "INVALID_INPUT", "Cannot update a directory: dir"},
		{"*** Begin Patch\n*** Update File: a.txt\n*** Move to: dir/keep\n@@\n-a\n+b\n*** End Patch", "DEST_EXISTS", "Cannot move to a file that already exists: dir/keep"},
	} {
		out := e.call("apply-patch", mustJSON(t, map[string]string{"patch": c.patch}))
		var f struct{ Code string }
		_ = json.Unmarshal(out.Result.Result, &f)
		if out.Result.Success || out.Result.Error != c.msg || f.Code != c.code {
			t.Errorf("%q: success=%v error %q code %q, want %q %q", c.patch, out.Result.Success, out.Result.Error, f.Code, c.msg, c.code)
		}
	}
	if e.read("a.txt") != "a\n" || e.read("dir/keep") != "k\n" {
		t.Fatal("a refused patch changed a file")
	}
}

// TestApplyPatchRollback makes the last write fail (its folder is a file) and checks that
// the writes before it are undone: an updated file gets its content back, a new one goes.
func TestApplyPatchRollback(t *testing.T) {
	e := newEnv(t)
	e.write(map[string]string{"a.txt": "a\n", "plain": "not a folder\n"})
	patch := "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** Add File: new.txt\n+n\n*** Add File: plain/x.txt\n+x\n*** End Patch"
	out := e.call("apply-patch", mustJSON(t, map[string]string{"patch": patch}))
	var f struct {
		Code           string
		Path           string
		RollbackErrors []string
	}
	_ = json.Unmarshal(out.Result.Result, &f)
	if out.Result.Success || f.Code != "APPLY_ERROR" || f.Path != filepath.Join(e.ws, "plain/x.txt") || len(f.RollbackErrors) != 0 {
		t.Fatalf("failed write: %+v %s", out.Result, out.Result.Result)
	}
	if e.read("a.txt") != "a\n" {
		t.Fatalf("a.txt not rolled back: %q", e.read("a.txt"))
	}
	if _, err := os.Stat(filepath.Join(e.ws, "new.txt")); !os.IsNotExist(err) {
		t.Fatalf("new.txt not removed by the rollback: %v", err)
	}
}

package builtin_test

import (
	"encoding/json"
	"os"
	"path/filepath"
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
	if out.Result.Error != "USER_REJECTION" || e.read("src/old.txt") != "obsolete\n" {
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

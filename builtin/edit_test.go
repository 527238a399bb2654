package builtin_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jean2/jean2/tool"
)

func TestWriteFile(t *testing.T) {
	e := newEnv(t)
	ledger := 0
	e.golden("write-file/create", e.call("write-file", `{"path":"new/dir/hello.go","content":"package hello\n\nfunc Hi() {}\n"}`))
	if got := e.read("new/dir/hello.go"); got != "package hello\n\nfunc Hi() {}\n" {
		t.Fatalf("written: %q", got)
	}
	e.golden("write-file/overwrite", e.call("write-file", `{"path":"new/dir/hello.go","content":"package hello\n"}`))
	e.golden("write-file/blocked", e.call("write-file", `{"path":"/etc/jean2-test","content":"x"}`))
	_ = ledger

	// jean2's own home is protected: even with every ask granted, the host refuses.
	e.asker.byType["permission"] = "true"
	out := e.call("write-file", fmt.Sprintf(`{"path":%q,"content":"x"}`, filepath.Join(e.root, "home", "config.json")))
	if out.Result.Success || !strings.Contains(out.Result.Error, "protected") {
		t.Fatalf("home: %+v", out.Result)
	}
	if _, err := os.Stat(filepath.Join(e.root, "home", "config.json")); err == nil {
		t.Fatal("config.json was written")
	}
}

// The write lands on the call's ledger, so undo can take it back.
func TestWriteFileLedger(t *testing.T) {
	e := newEnv(t)
	e.write(map[string]string{"a.txt": "before"})
	l := tool.NewLedger()
	out := e.h.Invoke(t.Context(), hostCall(e, "write-file", `{"path":"a.txt","content":"after"}`, l))
	if !out.Result.Success {
		t.Fatal(out.Result.Error)
	}
	if s := l.Summary(); s.Changed != 1 || s.Paths[0] != filepath.Join(e.ws, "a.txt") {
		t.Fatalf("ledger: %+v", s)
	}
}

func TestEdit(t *testing.T) {
	e := newEnv(t)
	e.write(map[string]string{
		"main.go":  "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n",
		"dup.txt":  "x = 1\ny = 2\nx = 1\n",
		"crlf.txt": "one\r\ntwo\r\nthree\r\n",
		"trail.py": "def f():   \n    return 1\n",
		"ind.py":   "class A:\n    def f(self):\n        return 1\n",
	})
	e.golden("edit/exact", e.call("edit", `{"path":"main.go","oldString":"println(\"hi\")","newString":"println(\"hello\")"}`))
	if got := e.read("main.go"); got != "package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n" {
		t.Fatalf("main.go: %q", got)
	}
	e.golden("edit/ambiguous", e.call("edit", `{"path":"dup.txt","oldString":"x = 1","newString":"x = 3"}`))
	e.golden("edit/no-match", e.call("edit", `{"path":"dup.txt","oldString":"z = 9","newString":"y = 2"}`))
	e.golden("edit/missing", e.call("edit", `{"path":"nope.txt","oldString":"a","newString":"b"}`))
	e.golden("edit/line-endings", e.call("edit", `{"path":"crlf.txt","oldString":"one\ntwo","newString":"uno\ndos"}`))
	if got := e.read("crlf.txt"); got != "uno\r\ndos\r\nthree\r\n" {
		t.Fatalf("crlf.txt: %q", got)
	}
	e.golden("edit/trailing", e.call("edit", `{"path":"trail.py","oldString":"def f():\n    return 1","newString":"def f():\n    return 2"}`))
	if got := e.read("trail.py"); got != "def f():\n    return 2\n" {
		t.Fatalf("trail.py: %q", got)
	}
	e.golden("edit/indentation", e.call("edit", `{"path":"ind.py","oldString":"def f(self):\n    return 1","newString":"def f(self):\n    return 2"}`))
	if got := e.read("ind.py"); got != "class A:\n    def f(self):\n        return 2\n" {
		// the replacement is shifted as the match was
		t.Fatalf("ind.py: %q", got)
	}
	e.golden("edit/line-start", e.call("edit", `{"path":"dup.txt","oldString":"y =","newString":"why =","strategy":"line_start"}`))
	e.golden("edit/bad-strategy", e.call("edit", `{"path":"dup.txt","oldString":"y","newString":"z","strategy":"fuzzy"}`))
}

func TestMultiEdit(t *testing.T) {
	e := newEnv(t)
	e.write(map[string]string{"c.ts": "const x = 1;\nconst y = 2;\nconst z = 3;\n"})
	e.golden("multiedit/ok", e.call("multiedit", `{"path":"c.ts","edits":[{"oldString":"const x = 1;","newString":"const x = 10;"},{"oldString":"const x = 10;\nconst y = 2;","newString":"const y = 20;"}]}`))
	if got := e.read("c.ts"); got != "const y = 20;\nconst z = 3;\n" {
		t.Fatalf("c.ts: %q", got)
	}
	// One failing edit leaves the file as it was.
	e.golden("multiedit/atomic", e.call("multiedit", `{"path":"c.ts","edits":[{"oldString":"const z = 3;","newString":"const z = 30;"},{"oldString":"const w","newString":"x"}]}`))
	if got := e.read("c.ts"); got != "const y = 20;\nconst z = 3;\n" {
		t.Fatalf("c.ts after a failed batch: %q", got)
	}
	// More than ten edits need the person's approval.
	var edits []string
	for i := 0; i < 11; i++ {
		edits = append(edits, `{"oldString":"const z = 3;","newString":"const z = 3;"}`)
	}
	out := e.call("multiedit", `{"path":"c.ts","edits":[`+strings.Join(edits, ",")+`]}`)
	if !strings.HasPrefix(out.Result.Error, "USER_REJECTION") || e.asker.questions()[0] != "Editing more than 10 edits at once requires approval." {
		t.Fatalf("eleven edits: %+v %q", out.Result, e.asker.questions())
	}
}

// A link in the workspace that leads out: edit and write-file are refused by ctx.FS until
// the person grants the place, as for a path outside.
func TestEditLinkLeadingOut(t *testing.T) {
	e := newEnv(t)
	outside := filepath.Join(e.root, "outside.txt")
	if err := os.WriteFile(outside, []byte("a = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(e.ws, "link.txt")); err != nil {
		t.Fatal(err)
	}
	out := e.call("edit", `{"path":"link.txt","oldString":"a = 1","newString":"a = 2"}`)
	if !strings.HasPrefix(out.Result.Error, "USER_REJECTION") {
		t.Fatalf("edit without a grant: %+v", out.Result)
	}
	out = e.call("write-file", `{"path":"link.txt","content":"gone"}`)
	if !strings.HasPrefix(out.Result.Error, "USER_REJECTION") {
		t.Fatalf("write without a grant: %+v", out.Result)
	}
	if b, _ := os.ReadFile(outside); string(b) != "a = 1\n" {
		t.Fatalf("outside.txt changed without a grant: %q", b)
	}
	e.asker.byType["permission"] = "true"
	out = e.call("edit", `{"path":"link.txt","oldString":"a = 1","newString":"a = 2"}`)
	if !out.Result.Success {
		t.Fatalf("edit with a grant: %+v", out.Result)
	}
	if b, _ := os.ReadFile(outside); string(b) != "a = 2\n" {
		t.Fatalf("outside.txt after the granted edit: %q", b)
	}
}

// A write outside the workspace that the person allowed is made (issue 24: into a folder
// that was there it failed, "mkdir … outside the workspace … ctx.ask(…)"). A folder that is
// not there is asked for on its own, as the grant of a file does not cover making folders.
func TestWriteFileOutsideApproved(t *testing.T) {
	e := newEnv(t)
	e.asker.byType["permission"] = "true"
	there := filepath.Join(e.root, "x")
	if err := os.MkdirAll(there, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(p string) *tool.Ledger {
		t.Helper()
		l := tool.NewLedger()
		out := e.h.Invoke(t.Context(), hostCall(e, "write-file", fmt.Sprintf(`{"path":%q,"content":"hi\n"}`, p), l))
		if !out.Result.Success {
			t.Fatalf("write %s: %s", p, out.Result.Error)
		}
		if b, err := os.ReadFile(p); err != nil || string(b) != "hi\n" {
			t.Fatalf("%s: %q %v", p, b, err)
		}
		return l
	}
	for _, c := range write(filepath.Join(there, "outside.txt")).Changes() {
		if !c.OK {
			t.Fatalf("a failed change on the ledger: %+v", c)
		}
	}
	asked := len(e.asker.questions())
	write(filepath.Join(e.root, "y", "z", "new.txt"))
	qs := e.asker.questions()[asked:]
	if len(qs) != 2 || !strings.Contains(qs[1], `"y"`) {
		t.Fatalf("asks for a file in a new folder: %q", qs)
	}
}

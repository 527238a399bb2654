package builtin_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/tool"
)

// tree is a small project: sources, a .gitignore at the root and one below it, skipped
// folders, a binary file and dotfiles.
func tree(e *env) {
	e.write(map[string]string{
		".gitignore":              "*.log\n/generated/\nsecret*\n!secret.md\n",
		"main.go":                 "package main\n\n// TODO: wire the server\nfunc main() {}\n",
		"lib/util.go":             "package lib\n\nfunc Util() int { return 1 } // TODO tests\n",
		"lib/util_test.go":        "package lib\n",
		"lib/.gitignore":          "fixtures/\n",
		"lib/fixtures/big.go":     "package fixtures // TODO ignored\n",
		"web/app.ts":              "export const todo = 'TODO: later';\n",
		"web/app.test.ts":         "// TODO test\n",
		"generated/out.go":        "// TODO generated\n",
		"debug.log":               "TODO in a log\n",
		"secret.txt":              "TODO secret\n",
		"secret.md":               "TODO kept by negation\n",
		"node_modules/x/index.js": "// TODO dependency\n",
		"img.bin":                 "TODO\x00binary",
		"data/blob.txt":           "TO\x00DO",
		".hidden/h.go":            "// TODO hidden\n",
	})
	// Modification times fixed apart, so glob's newest-first order is known.
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, rel := range []string{"main.go", "lib/util.go", "lib/util_test.go", "web/app.ts", "web/app.test.ts", "secret.md", ".hidden/h.go"} {
		tm := base.Add(time.Duration(i) * time.Hour)
		if err := os.Chtimes(filepath.Join(e.ws, rel), tm, tm); err != nil {
			e.t.Fatal(err)
		}
	}
}

func TestGlob(t *testing.T) {
	e := newEnv(t)
	tree(e)
	e.golden("glob/recursive", e.call("glob", `{"pattern":"**/*.go"}`))
	e.golden("glob/top", e.call("glob", `{"pattern":"*.{go,md}"}`))
	e.golden("glob/sub", e.call("glob", `{"pattern":"lib/*.go","ignore":["*_test.go"]}`))
	e.golden("glob/path", e.call("glob", `{"pattern":"*.ts","path":"web"}`))
	e.golden("glob/literal", e.call("glob", `{"pattern":"main.go"}`))
	e.golden("glob/literal-missing", e.call("glob", `{"pattern":"nope.go"}`))
	e.golden("glob/invalid", e.call("glob", `{"pattern":"[a-"}`))

	// Over the cap: the list stops and says how many more there are.
	many := map[string]string{}
	for i := 0; i < 1005; i++ {
		many[fmt.Sprintf("many/f%04d.txt", i)] = "x"
	}
	e.write(many)
	out := e.call("glob", `{"pattern":"many/*.txt"}`)
	var r struct {
		Files     []string
		Truncated bool
		More      int
	}
	decode(t, out.Result.Result, &r)
	if len(r.Files) != 1000 || !r.Truncated || r.More != 5 || !strings.Contains(string(out.Result.Visualization), "1000 files shown, 5 more") {
		t.Fatalf("cap: %d %v %d %s", len(r.Files), r.Truncated, r.More, out.Result.Visualization)
	}
}

func TestGrep(t *testing.T) {
	e := newEnv(t)
	tree(e)
	e.golden("grep/tree", e.call("grep", `{"pattern":"TODO","path":"."}`))
	e.golden("grep/include", e.call("grep", `{"pattern":"TODO","path":".","include":"*.ts","ignore":["*.test.ts"]}`))
	e.golden("grep/file", e.call("grep", `{"pattern":"^func","path":"main.go"}`))
	e.golden("grep/anchored-in-tree", e.call("grep", `{"pattern":"^func \\w+\\(\\)","path":"."}`))
	e.golden("grep/invalid", e.call("grep", `{"pattern":"(?<=x)","path":"."}`))
	e.golden("grep/missing", e.call("grep", `{"pattern":"x","path":"nope"}`))

	many := strings.Repeat("hit\n", 5003)
	e.write(map[string]string{"many/hits.txt": many})
	out := e.call("grep", `{"pattern":"hit","path":"many"}`)
	var r struct {
		Matches   []json.RawMessage
		Truncated bool
		More      int
	}
	decode(t, out.Result.Result, &r)
	if len(r.Matches) != 5000 || !r.Truncated || r.More != 3 || !strings.Contains(string(out.Result.Visualization), "5000 matches shown, 3 more") {
		t.Fatalf("cap: %d %v %d %s", len(r.Matches), r.Truncated, r.More, out.Result.Visualization)
	}
	// The result is larger than the host lets a model see: the model gets a preview and
	// the host's overflow file, which read-file reads without asking.
	if out.Overflow == nil {
		t.Fatalf("no overflow for %d bytes", len(out.Result.Result))
	}
	read := e.call("read-file", fmt.Sprintf(`{"path":%q,"limit":3}`, out.Overflow.Path))
	if !read.Result.Success || len(e.asker.asked) != 0 {
		t.Fatalf("reading the overflow file: %+v, asked %v", read.Result, e.asker.questions())
	}
}

func TestLs(t *testing.T) {
	e := newEnv(t)
	tree(e)
	e.golden("ls/root", e.call("ls", `{}`))
	e.golden("ls/hidden-ignore", e.call("ls", `{"showHidden":true,"ignore":["web"]}`))
	e.golden("ls/sub", e.call("ls", `{"path":"lib"}`))
	e.golden("ls/not-dir", e.call("ls", `{"path":"main.go"}`))
	many := map[string]string{}
	for i := 0; i < 150; i++ {
		many[fmt.Sprintf("many/f%03d.txt", i)] = "x"
	}
	e.write(many)
	out := e.call("ls", `{"path":"many"}`)
	var r struct {
		Content   string
		Truncated bool `json:"_truncated"`
		Count     int  `json:"_count"`
	}
	decode(t, out.Result.Result, &r)
	if !r.Truncated || r.Count != 150 || !strings.HasSuffix(r.Content, "(Showing 100 of 150 entries. Use grep or glob for targeted searching.)") {
		t.Fatalf("cap: %+v", r)
	}
}

// Outside the workspace, grep, glob and ls ask once for the folder; once granted they see
// its files (the catalogue's grep and glob reported 0 results after such a grant, their
// ask naming no path that ctx.fs could honour).
func TestSearchOutsideAfterGrant(t *testing.T) {
	e := newEnv(t)
	other := filepath.Join(e.root, "other")
	if err := os.MkdirAll(filepath.Join(other, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "sub", "x.go"), []byte("// NEEDLE\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := fmt.Sprintf(`{"pattern":"NEEDLE","path":%q}`, other)
	if out := e.call("grep", args); !strings.HasPrefix(out.Result.Error, "USER_REJECTION") {
		t.Fatalf("grep outside without a grant: %+v", out.Result)
	}
	e.asker.byType["permission"] = "true"
	for name, args := range map[string]string{
		"grep": args,
		"glob": fmt.Sprintf(`{"pattern":"**/*.go","path":%q}`, other),
		"ls":   fmt.Sprintf(`{"path":%q}`, other),
	} {
		out := e.call(name, args)
		if !out.Result.Success || !strings.Contains(string(out.Result.Result), "x.go") {
			t.Errorf("%s outside with a grant: %+v", name, out.Result)
		}
	}
	if len(e.asker.asked) < 2 || e.asker.asked[1].Paths[0] != other {
		t.Fatalf("asks: %+v", e.asker.asked)
	}
}

// TestSearchRefusals covers what glob and grep refuse before walking (a system folder, a
// bad include or ignore pattern, a sensitive folder nobody approved), that grep's path
// defaults to the workspace, and that a long matching line is cut.
func TestSearchRefusals(t *testing.T) {
	e := newEnv(t)
	tree(e)
	e.write(map[string]string{"secrets/config": "Host x\n", "long.txt": "needle " + strings.Repeat("x", 3000) + "\n"})
	for _, c := range []struct{ tool, args, want string }{
		{"grep", `{"pattern":"x","path":"/proc"}`, "Searching in system directories is not allowed: /proc"},
		{"grep", `{"pattern":"x","path":".","include":"[a-"}`, `Invalid include pattern: "[a-"`},
		{"grep", `{"pattern":"Host","path":"secrets"}`, tool.UserRejection},
		{"glob", `{"pattern":"*","path":"/proc"}`, "Globbing system directories is not allowed: /proc"},
		{"glob", `{"pattern":"*","ignore":["[a-"]}`, `Invalid ignore pattern: "[a-"`},
	} {
		out := e.call(c.tool, c.args)
		if out.Result.Success || !strings.Contains(out.Result.Error, c.want) {
			t.Errorf("%s %s: %+v, want an error with %q", c.tool, c.args, out.Result, c.want)
		}
	}
	out := e.call("grep", `{"pattern":"^needle","path":""}`)
	var r struct {
		Matches []struct{ File, Content string }
	}
	decode(t, out.Result.Result, &r)
	if len(r.Matches) != 1 || r.Matches[0].File != "long.txt" || len(r.Matches[0].Content) >= 3000 || !strings.HasPrefix(r.Matches[0].Content, "needle x") {
		t.Fatalf("default path, long line: %+v", r.Matches)
	}
}

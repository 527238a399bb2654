package skills

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseFrontMatter(t *testing.T) {
	long := strings.Repeat("x", 2000)
	cases := []struct {
		name, text, dir string
		want            Meta
		err             string
	}{
		{"minimal", "---\nname: pdf\ndescription: Fill PDFs.\n---\nbody", "pdf", Meta{Name: "pdf", Description: "Fill PDFs."}, ""},
		{"crlf and bom", "\xef\xbb\xbf---\r\nname: pdf\r\ndescription: Fill PDFs.\r\n---\r\nbody", "pdf", Meta{Name: "pdf", Description: "Fill PDFs."}, ""},
		{"name from the folder (Claude Code)", "---\ndescription: d\n---\n", "my-skill", Meta{Name: "my-skill", Description: "d"}, ""},
		{"description from the first paragraph (Claude Code)", "---\nname: a\n---\n# Title\n\nFirst line\nsecond line.\n\nMore.", "a", Meta{Name: "a", Description: "First line second line."}, ""},
		{"folded description", "---\nname: a\ndescription: >\n  one\n  two\n---\n", "a", Meta{Name: "a", Description: "one two"}, ""},
		{"other fields ignored", "---\nname: a\ndescription: d\nallowed-tools: Read Grep\nmetadata:\n  v: \"1\"\n---\n", "a", Meta{Name: "a", Description: "d"}, ""},
		{"manual", "---\nname: a\ndescription: d\ndisable-model-invocation: true\n---\n", "a", Meta{Name: "a", Description: "d", Manual: true}, ""},
		{"long description cut", "---\nname: a\ndescription: " + long + "\n---\n", "a", Meta{Name: "a", Description: long[:MaxDescription-1] + "…"}, ""},
		{"no front matter", "# just markdown\n", "a", Meta{}, "does not begin with front matter"},
		{"not closed", "---\nname: a\ndescription: d\n", "a", Meta{}, "not closed"},
		{"bad yaml", "---\nname: a\ndescription: [x\n---\n", "a", Meta{}, "not valid YAML"},
		{"name wrong type", "---\nname: [a, b]\ndescription: d\n---\n", "a", Meta{}, "not valid YAML"},
		{"bad name", "---\nname: PDF_Forms\ndescription: d\n---\n", "a", Meta{}, "lowercase"},
		{"double hyphen", "---\nname: a--b\ndescription: d\n---\n", "a", Meta{}, "lowercase"},
		{"no description at all", "---\nname: a\n---\n# Only a heading\n", "a", Meta{}, "no description"},
		{"not utf-8", "---\nname: a\ndescription: \xff\n---\n", "a", Meta{}, "UTF-8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _, err := Parse([]byte(c.text), c.dir)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one with %q", err, c.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("Parse = %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

func put(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A workspace's skill replaces the home's of the same name; two of one folder with one name
// are reported; a link out of the skills folder is not followed; a broken skill does not
// hide the others.
func TestScanScopesAndLinks(t *testing.T) {
	root := t.TempDir()
	home, ws, outside := filepath.Join(root, "home"), filepath.Join(root, "ws"), filepath.Join(root, "outside")
	put(t, filepath.Join(home, "skills", "deploy", FileName), "---\ndescription: home deploy\n---\n")
	put(t, filepath.Join(home, "skills", "twin-a", FileName), "---\nname: twin\ndescription: a\n---\n")
	put(t, filepath.Join(home, "skills", "twin-b", FileName), "---\nname: twin\ndescription: b\n---\n")
	put(t, filepath.Join(ws, ".jean2", "skills", "deploy", FileName), "---\ndescription: workspace deploy\n---\n")
	put(t, filepath.Join(ws, ".jean2", "skills", "bad", FileName), "no front matter")
	put(t, filepath.Join(outside, "stolen", FileName), "---\ndescription: SECRET outside\n---\n")
	if err := os.Symlink(filepath.Join(outside, "stolen"), filepath.Join(ws, ".jean2", "skills", "stolen")); err != nil {
		t.Fatal(err)
	}
	set := Scan(home, ws)
	p := set.Prompt()
	if !strings.Contains(p, "- deploy: workspace deploy") || strings.Contains(p, "home deploy") ||
		!strings.Contains(p, "- twin: a") || strings.Contains(p, "SECRET") || strings.Contains(p, "bad") {
		t.Fatalf("prompt:\n%s\nset: %+v", p, set)
	}
	if len(set.Broken()) != 2 { // twin-b, bad
		t.Fatalf("broken = %+v", set.Broken())
	}
	// The skills folder itself a link out of the workspace: refused, listed as broken.
	ws2 := filepath.Join(root, "ws2")
	put(t, filepath.Join(ws2, "x"), "")
	if err := os.Symlink(outside, filepath.Join(ws2, ".jean2")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(outside, "skills"), 0o755); err != nil {
		t.Fatal(err)
	}
	put(t, filepath.Join(outside, "skills", "s", FileName), "---\ndescription: SECRET2\n---\n")
	set = Scan("", ws2)
	if strings.Contains(set.Prompt(), "SECRET2") || len(set.Broken()) != 1 {
		t.Fatalf("a linked-out skills folder: %+v", set)
	}
	// A file of a skill read through a link out of its folder is refused.
	if err := os.Symlink(filepath.Join(outside, "stolen", FileName), filepath.Join(home, "skills", "deploy", "leak.md")); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(home, "", "deploy", "leak.md"); err == nil {
		t.Fatal("read a file through a link out of the skill's folder")
	}
	if _, err := ReadFile(home, "", "deploy", "../twin-a/SKILL.md"); err == nil {
		t.Fatal("read a file of another skill with ..")
	}
}

// BenchmarkScan50 is what reading the skills costs each turn with 50 installed (bodies of
// 22 KB each, which the scan reads whole to find the end of the front matter).
func BenchmarkScan50(b *testing.B) {
	home := b.TempDir()
	body := strings.Repeat("Step: do the thing carefully and check it. ", 500)
	for i := range 50 {
		name := "skill-" + string(rune('a'+i/26)) + string(rune('a'+i%26))
		p := filepath.Join(home, "skills", name, FileName)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("---\nname: "+name+"\ndescription: Handle one task of the project, what it does and when to use it.\n---\n"+body), 0o644)
	}
	b.ResetTimer()
	for b.Loop() {
		if n := len(Scan(home, "").Skills); n != 50 {
			b.Fatal(n)
		}
	}
}

// A skill marked disable-model-invocation (Claude Code's) is listed but neither offered to
// the model nor loaded for it.
func TestManualSkillNotForTheModel(t *testing.T) {
	home := t.TempDir()
	put(t, filepath.Join(home, "skills", "deploy", FileName), "---\ndescription: Deploy to production.\ndisable-model-invocation: true\n---\nSteps.\n")
	set := Scan(home, "")
	if len(set.Skills) != 1 || !set.Skills[0].Manual || set.Prompt() != "" {
		t.Fatalf("set %+v, prompt %q", set, set.Prompt())
	}
	if _, err := Load(home, "", "deploy"); err == nil || !strings.Contains(err.Error(), "not the model") {
		t.Fatalf("Load of a manual skill: %v", err)
	}
}

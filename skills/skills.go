// Package skills owns the agent's skills: folders holding a SKILL.md (YAML front matter with
// a name and a description, then Markdown instructions) and any files the instructions
// refer to, in $JEAN2_HOME/skills and in a workspace's .jean2/skills. The shape is Claude
// Code's and the Agent Skills specification's, so people bring the skills they have.
//
// Skills load live like tools: Scan reads the folders again at every turn, so a SKILL.md
// saved now is offered at the next turn, and a broken one is listed with its error while
// the others go on. Only each skill's name and description join the system prompt (Prompt);
// the body and the files are read when the model asks for them (the skill tool).
package skills

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// FileName is the file that makes a folder a skill.
const FileName = "SKILL.md"

// Limits of what is read of a skill.
const (
	// MaxSkillBytes caps a SKILL.md: a larger one is listed as broken.
	MaxSkillBytes = 256 << 10
	// MaxDescription caps the description that joins every request; a longer one is cut
	// (the Agent Skills specification allows 1024 characters).
	MaxDescription = 1024
	// MaxSkills caps the skills of one folder that are read; the rest are listed as
	// not read.
	MaxSkills = 500
)

// Scopes: where a skill comes from.
const (
	ScopeHome      = "home"      // $JEAN2_HOME/skills: every workspace's
	ScopeWorkspace = "workspace" // <workspace>/.jean2/skills: that workspace's only
)

// Skill is one skill folder, usable or broken.
type Skill struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Scope       string `json:"scope"`
	// Dir is the skill's folder.
	Dir string `json:"path"`
	// Manual is Claude Code's disable-model-invocation: the skill is listed for people but
	// not offered to the model.
	Manual bool `json:"disableModelInvocation,omitempty"`
	// Hidden is Claude Code's user-invocable: false: offered to the model, not to people (no
	// MCP prompt).
	Hidden bool `json:"hiddenFromPeople,omitempty"`
	// ArgumentHint and Arguments are what a person passes when invoking the skill
	// (args.go).
	ArgumentHint string     `json:"argumentHint,omitempty"`
	Arguments    []Argument `json:"arguments,omitempty"`
	// Shadowed says a workspace's skill of the same name replaces this one.
	Shadowed bool `json:"shadowed,omitempty"`
	// Error says why the skill cannot be used (bad front matter, unreadable SKILL.md);
	// "" for a usable one.
	Error string `json:"error,omitempty"`
}

// Usable reports whether the model may load the skill.
func (s Skill) Usable() bool { return s.Error == "" && !s.Shadowed }

// Set is the skills of a workspace, sorted by scope (home first) then name.
type Set struct {
	Skills []Skill `json:"skills"`
}

// Find returns the usable skill named name.
func (s Set) Find(name string) (Skill, bool) {
	for _, sk := range s.Skills {
		if sk.Name == name && sk.Usable() {
			return sk, true
		}
	}
	return Skill{}, false
}

// Broken returns the skills that could not be read.
func (s Set) Broken() []Skill {
	var out []Skill
	for _, sk := range s.Skills {
		if sk.Error != "" {
			out = append(out, sk)
		}
	}
	return out
}

// Folder is where the skills of a scope live: Dir below Root, which is the trusted folder
// it is reached from ($JEAN2_HOME, or the workspace), so a Dir that is a link leading out of
// Root is refused rather than followed.
type Folder struct {
	Scope string
	Root  string
	Rel   string
}

// Dir is the folder's path.
func (f Folder) Dir() string { return filepath.Join(f.Root, f.Rel) }

// Folders are the skill folders of a workspace: $JEAN2_HOME/skills (home "" for none),
// then the workspace's .jean2/skills (workspace "" for none), so the nearer wins.
func Folders(home, workspace string) []Folder {
	var out []Folder
	if home != "" {
		out = append(out, Folder{Scope: ScopeHome, Root: home, Rel: "skills"})
	}
	if workspace != "" {
		out = append(out, Folder{Scope: ScopeWorkspace, Root: workspace, Rel: filepath.Join(".jean2", "skills")})
	}
	return out
}

// FolderOf returns the folder of a scope.
func FolderOf(home, workspace, scope string) (Folder, error) {
	for _, f := range Folders(home, workspace) {
		if f.Scope == scope {
			return f, nil
		}
	}
	return Folder{}, fmt.Errorf("no skills folder for scope %q: give \"home\" or \"workspace\"", scope)
}

// Open opens the folder as an os.Root reached from f.Root: a link anywhere on the way that
// leads out of f.Root is refused.
func (f Folder) Open() (*os.Root, error) {
	top, err := os.OpenRoot(f.Root)
	if err != nil {
		return nil, err
	}
	defer top.Close()
	return top.OpenRoot(f.Rel)
}

// Scan reads every skill of the workspace's folders. It never fails: a folder that is
// missing has no skills, one that cannot be read is listed as a broken skill named after
// the folder, and each broken SKILL.md is listed with its error.
func Scan(home, workspace string) Set {
	var set Set
	byName := map[string]int{}
	for _, f := range Folders(home, workspace) {
		for _, sk := range scanFolder(f) {
			if i, ok := byName[sk.Name]; ok && sk.Error == "" {
				if set.Skills[i].Scope == sk.Scope {
					sk.Error = fmt.Sprintf("another skill of this folder, %s, has the name %q", set.Skills[i].Dir, sk.Name)
				} else {
					set.Skills[i].Shadowed = true
				}
			}
			if sk.Error == "" {
				byName[sk.Name] = len(set.Skills)
			}
			set.Skills = append(set.Skills, sk)
		}
	}
	return set
}

// scanFolder reads the skills of one folder, sorted by name.
func scanFolder(f Folder) []Skill {
	root, err := f.Open()
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return []Skill{{Name: filepath.Base(f.Rel), Scope: f.Scope, Dir: f.Dir(),
			Error: fmt.Sprintf("the skills folder cannot be read: %v (a link may lead only inside %s)", err, f.Root)}}
	}
	defer root.Close()
	entries, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return []Skill{{Name: filepath.Base(f.Rel), Scope: f.Scope, Dir: f.Dir(), Error: fmt.Sprintf("the skills folder cannot be listed: %v", err)}}
	}
	var out []Skill
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if st, err := root.Stat(e.Name()); err != nil || !st.IsDir() {
			continue // a file beside the skills, or a link that leads out: not a skill
		}
		if len(out) == MaxSkills {
			out = append(out, Skill{Name: e.Name(), Scope: f.Scope, Dir: filepath.Join(f.Dir(), e.Name()),
				Error: fmt.Sprintf("not read: a skills folder holds at most %d skills", MaxSkills)})
			break
		}
		out = append(out, readSkill(root, f, e.Name()))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// readSkill reads the front matter of one skill folder.
func readSkill(root *os.Root, f Folder, dir string) Skill {
	sk := Skill{Name: dir, Scope: f.Scope, Dir: filepath.Join(f.Dir(), dir)}
	data, err := readHead(root, filepath.Join(dir, FileName))
	if errors.Is(err, fs.ErrNotExist) {
		sk.Error = "the folder has no " + FileName
		return sk
	}
	if err != nil {
		sk.Error = err.Error()
		return sk
	}
	meta, _, err := Parse(data, dir)
	if err != nil {
		sk.Error = fmt.Sprintf("%s: %v", FileName, err)
		return sk
	}
	sk.Name, sk.Description, sk.Manual, sk.Hidden = meta.Name, meta.Description, meta.Manual, meta.Hidden
	sk.ArgumentHint, sk.Arguments = meta.ArgumentHint, meta.Arguments
	return sk
}

// What a scan reads of a SKILL.md: the front matter and the start of the body (whose first
// paragraph is the description when the front matter gives none), headBytes at first and
// more, up to maxHeadBytes, while the front matter is not closed. The rest is read when the
// skill is loaded.
const (
	headBytes    = 4 << 10
	maxHeadBytes = 64 << 10
)

// readHead reads the start of a SKILL.md within root, whole lines only; a file larger
// than MaxSkillBytes is an error, as Load would find.
func readHead(root *os.Root, rel string) ([]byte, error) {
	fh, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	switch {
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file", rel)
	case st.Size() > MaxSkillBytes:
		return nil, fmt.Errorf("%s is larger than %d bytes", rel, MaxSkillBytes)
	}
	for size := int64(headBytes); ; size *= 4 {
		buf := make([]byte, min(st.Size(), size))
		n, err := fh.ReadAt(buf, 0)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read %s: %w", rel, err)
		}
		buf = buf[:n]
		if int64(n) == st.Size() {
			return buf, nil
		}
		// Cut at a line's end, so no character is split and the front matter's closing
		// line, when it was read, is whole.
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			buf = buf[:i+1]
		}
		if bytes.Contains(buf[min(len(buf), 3):], []byte("\n---")) || size >= maxHeadBytes {
			return buf, nil
		}
	}
}

// readFile reads a regular file within root, at most limit bytes (a larger one is an
// error). O_NONBLOCK: a FIFO planted under the name would block the open; it is refused
// as not a regular file.
func readFile(root *os.Root, rel string, limit int64) ([]byte, error) {
	fh, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", rel)
	}
	data, err := io.ReadAll(io.LimitReader(fh, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", rel, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", rel, limit)
	}
	return data, nil
}

// Meta is what a SKILL.md's front matter says that jean2 uses; other fields (license,
// allowed-tools, metadata, …) are allowed and ignored.
type Meta struct {
	Name         string
	Description  string
	Manual       bool
	Hidden       bool
	ArgumentHint string
	Arguments    []Argument
}

// frontMatter is the YAML of a SKILL.md's front matter.
type frontMatter struct {
	Name                   string  `yaml:"name"`
	Description            string  `yaml:"description"`
	DisableModelInvocation bool    `yaml:"disable-model-invocation"`
	UserInvocable          *bool   `yaml:"user-invocable"`
	ArgumentHint           string  `yaml:"argument-hint"`
	Arguments              argList `yaml:"arguments"`
}

// namePattern is the Agent Skills specification's rule for names — lowercase letters,
// digits and single hyphens, not at either end — with underscores taken like hyphens, as
// MCP prompt and tool names often have them (test_simple_prompt).
var namePattern = regexp.MustCompile(`^[a-z0-9]+([-_][a-z0-9]+)*$`)

// CheckName reports what is wrong with a skill's name.
func CheckName(name string) error {
	if len(name) == 0 || len(name) > 64 || !namePattern.MatchString(name) {
		return fmt.Errorf("the name %q is not 1 to 64 lowercase letters, digits and single hyphens or underscores (like pdf-forms)", name)
	}
	return nil
}

// Parse splits a SKILL.md into its front matter and its body. dir is the skill's folder
// name, its name when the front matter gives none (as Claude Code does); a description left
// out is the body's first paragraph (as Claude Code does).
func Parse(data []byte, dir string) (Meta, string, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if !utf8.Valid(data) {
		return Meta{}, "", errors.New("it is not UTF-8 text")
	}
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	rest, ok := strings.CutPrefix(text, "---\n")
	if !ok {
		return Meta{}, "", errors.New("it does not begin with front matter (a line \"---\", then name: and description:, then \"---\")")
	}
	var yml, body string
	if end := strings.Index("\n"+rest, "\n---\n"); end >= 0 {
		yml, body = rest[:max(end-1, 0)], rest[end+4:]
	} else if strings.HasSuffix("\n"+rest, "\n---") {
		yml = strings.TrimSuffix(strings.TrimSuffix(rest, "---"), "\n")
	} else {
		return Meta{}, "", errors.New("its front matter is not closed by a line \"---\"")
	}
	var fm frontMatter
	if err := yaml.Unmarshal([]byte(yml), &fm); err != nil {
		return Meta{}, "", fmt.Errorf("its front matter is not valid YAML: %v", err)
	}
	m := Meta{Name: strings.TrimSpace(fm.Name), Description: strings.TrimSpace(fm.Description), Manual: fm.DisableModelInvocation,
		Hidden: fm.UserInvocable != nil && !*fm.UserInvocable, ArgumentHint: strings.TrimSpace(fm.ArgumentHint), Arguments: fm.Arguments}
	if m.Name == "" {
		m.Name = dir
	}
	if err := CheckName(m.Name); err != nil {
		return Meta{}, "", err
	}
	if m.Description == "" {
		m.Description = firstParagraph(body)
	}
	if m.Description == "" {
		return Meta{}, "", errors.New("it has no description: say what the skill does and when to use it (description: in the front matter)")
	}
	m.Description = cut(strings.Join(strings.Fields(m.Description), " "), MaxDescription)
	return m, strings.TrimSpace(body), nil
}

// firstParagraph is the first paragraph of Markdown text that is not a heading.
func firstParagraph(body string) string {
	var para []string
	for _, line := range strings.Split(body, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case t == "" && len(para) > 0:
			return strings.Join(para, " ")
		case t == "" || strings.HasPrefix(t, "#"):
		default:
			para = append(para, t)
		}
	}
	return strings.Join(para, " ")
}

// cut shortens s to at most n characters, marking the cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

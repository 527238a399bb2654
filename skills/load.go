package skills

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// Limits of what loading a skill returns.
const (
	// MaxFiles caps the files of a skill's folder that are listed.
	MaxFiles = 200
	// MaxFileBytes caps one of a skill's files read through the skill tool.
	MaxFileBytes = 256 << 10
)

// Loaded is a skill as the model gets it when it asks for it.
type Loaded struct {
	Skill
	Body string
	// Files are the other files of the skill's folder, relative to it, sorted; Truncated
	// says there were more than MaxFiles.
	Files     []string
	Truncated bool
}

// Load reads the skill named name of the workspace: its body and the list of its files.
func Load(home, workspace, name string) (Loaded, error) {
	sk, err := find(home, workspace, name)
	if err != nil {
		return Loaded{}, err
	}
	body, err := readBody(home, workspace, sk)
	if err != nil {
		return Loaded{}, err
	}
	root, err := folderOfSkill(home, workspace, sk).Open()
	if err != nil {
		return Loaded{}, fmt.Errorf("skill %s: open %s: %w", name, sk.Dir, err)
	}
	defer root.Close()
	dir := filepath.Base(sk.Dir)
	out := Loaded{Skill: sk, Body: body}
	sub, err := root.OpenRoot(dir)
	if err != nil {
		return Loaded{}, fmt.Errorf("skill %s: %w", name, err)
	}
	defer sub.Close()
	_ = fs.WalkDir(sub.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil || p == ".":
			return nil
		case strings.HasPrefix(d.Name(), "."):
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		case d.IsDir() || p == FileName:
			return nil
		case len(out.Files) == MaxFiles:
			out.Truncated = true
			return fs.SkipAll
		}
		out.Files = append(out.Files, p)
		return nil
	})
	return out, nil
}

// readBody reads the body of a skill Scan found (front matter removed).
func readBody(home, workspace string, sk Skill) (string, error) {
	root, err := folderOfSkill(home, workspace, sk).Open()
	if err != nil {
		return "", fmt.Errorf("skill %s: open %s: %w", sk.Name, sk.Dir, err)
	}
	defer root.Close()
	dir := filepath.Base(sk.Dir)
	data, err := readFile(root, filepath.Join(dir, FileName), MaxSkillBytes)
	if err != nil {
		return "", fmt.Errorf("skill %s: %w", sk.Name, err)
	}
	_, body, err := Parse(data, dir)
	if err != nil {
		return "", fmt.Errorf("skill %s: %s: %w", sk.Name, FileName, err)
	}
	return body, nil
}

// ForPerson returns the skill named name and its body, for a person invoking it (an MCP
// prompt): a skill for people only (disable-model-invocation) is one, a skill hidden from
// people (user-invocable: false) is not.
func ForPerson(home, workspace, name string) (Skill, string, error) {
	sk, ok := Scan(home, workspace).Find(name)
	if !ok || sk.Hidden {
		return Skill{}, "", fmt.Errorf("there is no skill named %q for people to invoke", name)
	}
	body, err := readBody(home, workspace, sk)
	return sk, body, err
}

// ReadFile reads one file of the skill named name, rel relative to its folder; a path that
// leaves the folder, or a link that leads out of it, is refused.
func ReadFile(home, workspace, name, rel string) (string, error) {
	sk, err := find(home, workspace, name)
	if err != nil {
		return "", err
	}
	clean := filepath.Clean(filepath.FromSlash(rel))
	if rel == "" || filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("skill %s: %q is not a path inside the skill's folder", name, rel)
	}
	root, err := folderOfSkill(home, workspace, sk).Open()
	if err != nil {
		return "", fmt.Errorf("skill %s: open %s: %w", name, sk.Dir, err)
	}
	defer root.Close()
	sub, err := root.OpenRoot(filepath.Base(sk.Dir))
	if err != nil {
		return "", fmt.Errorf("skill %s: %w", name, err)
	}
	defer sub.Close()
	data, err := readFile(sub, clean, MaxFileBytes)
	if err != nil {
		return "", fmt.Errorf("skill %s: %w", name, err)
	}
	return strings.ToValidUTF8(string(data), "\uFFFD"), nil
}

// find is the usable skill named name, or an error that lists the skills there are.
func find(home, workspace, name string) (Skill, error) {
	set := Scan(home, workspace)
	if sk, ok := set.Find(name); ok && sk.Manual {
		return Skill{}, fmt.Errorf("skill %s is for people to use, not the model (disable-model-invocation in %s)", name, sk.Dir)
	} else if ok {
		return sk, nil
	}
	for _, sk := range set.Skills {
		if sk.Name == name && sk.Error != "" {
			return Skill{}, fmt.Errorf("skill %s cannot be used: %s (%s)", name, sk.Error, sk.Dir)
		}
	}
	var names []string
	for _, sk := range set.Skills {
		if sk.Usable() && !sk.Manual {
			names = append(names, sk.Name)
		}
	}
	if len(names) == 0 {
		return Skill{}, fmt.Errorf("there is no skill named %q: no skills are installed", name)
	}
	return Skill{}, fmt.Errorf("there is no skill named %q; the skills are: %s", name, strings.Join(names, ", "))
}

// folderOfSkill is the skills folder a skill was found in.
func folderOfSkill(home, workspace string, sk Skill) Folder {
	f, _ := FolderOf(home, workspace, sk.Scope) // sk came from Scan: its scope is one of them
	return f
}

// Prompt is the part of the system prompt that lists the skills the model may load: each
// one's name and description, nothing more. "" when there are none.
func (s Set) Prompt() string {
	var b strings.Builder
	for _, sk := range s.Skills {
		if !sk.Usable() || sk.Manual {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("Skills are instructions for particular tasks, kept by the person. When a task matches a skill's description, load the skill with the skill tool before you start and follow it; read the files it refers to with the skill tool's file argument.\n<skills>\n")
		}
		fmt.Fprintf(&b, "- %s: %s\n", sk.Name, sk.Description)
	}
	if b.Len() > 0 {
		b.WriteString("</skills>")
	}
	return b.String()
}

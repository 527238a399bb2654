package skills

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/jean2/jean2/internal/fsutil"
	"github.com/jean2/jean2/tool"
	"github.com/jean2/jean2/toolfs"
)

// manageIn is skill_manage's input.
type manageIn struct {
	Action      string `json:"action"`
	Name        string `json:"name"`
	Scope       string `json:"scope"`
	Description string `json:"description"`
	Body        string `json:"body"`
	OldString   string `json:"oldString"`
	NewString   string `json:"newString"`
	Path        string `json:"path"`
	Content     string `json:"content"`
}

type manageOut struct {
	Action string `json:"action"`
	Name   string `json:"name"`
	Path   string `json:"path"`
}

// ManageTool is skill_manage: it creates a skill, edits its SKILL.md, and writes or removes
// its other files, in $JEAN2_HOME/skills (scope "home") or the workspace's .jean2/skills
// (scope "workspace", the default). Every write is asked of the person first, like a write
// outside the workspace (skills join later sessions' instructions), and a SKILL.md that
// would not load is refused, so the agent cannot break a skill.
func ManageTool(home string) tool.Tool {
	return tool.Func{Def: tool.Definition{
		Name: "skill_manage",
		Description: "Create and edit skills: instructions for a kind of task, kept for later sessions. " +
			"Actions: create (name, description: what it does and when to use it, body: Markdown instructions), " +
			"edit (name, oldString, newString: one exact replacement in its SKILL.md), " +
			"write_file (name, path relative to the skill's folder, content), remove_file (name, path). " +
			"scope is workspace (this workspace's .jean2/skills, the default for create) or home (every workspace's). " +
			"The person is asked before each write. Names are lowercase letters, digits and hyphens.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"action":{"type":"string","enum":["create","edit","write_file","remove_file"]},` +
			`"name":{"type":"string"},"scope":{"type":"string","enum":["workspace","home"]},` +
			`"description":{"type":"string"},"body":{"type":"string"},` +
			`"oldString":{"type":"string"},"newString":{"type":"string"},` +
			`"path":{"type":"string"},"content":{"type":"string"}},` +
			`"required":["action","name"],"additionalProperties":false}`),
		Timeout: 600000, // the person's answer may take a while
	}, Run: func(ctx context.Context, c *tool.Context, args json.RawMessage) tool.Result {
		var in manageIn
		if err := json.Unmarshal(args, &in); err != nil {
			return tool.Errorf("invalid arguments for skill_manage: %v", err)
		}
		out, err := manage(ctx, c, home, in)
		if err != nil {
			return tool.Errorf("skill_manage %s %s: %v", in.Action, in.Name, err)
		}
		return tool.Success(out)
	}}
}

// manage runs one action.
func manage(ctx context.Context, c *tool.Context, home string, in manageIn) (manageOut, error) {
	if err := CheckName(in.Name); err != nil {
		return manageOut{}, err
	}
	f, err := targetFolder(home, c.Workspace, in)
	if err != nil {
		return manageOut{}, err
	}
	out := manageOut{Action: in.Action, Name: in.Name, Path: filepath.Join(f.Dir(), in.Name)}
	switch in.Action {
	case "create":
		err = create(ctx, c, f, in)
	case "edit":
		err = edit(ctx, c, f, in)
	case "write_file", "remove_file":
		err = writeOther(ctx, c, f, in)
	default:
		err = fmt.Errorf("unknown action %q: give create, edit, write_file or remove_file", in.Action)
	}
	return out, err
}

// targetFolder is the skills folder an action works in: the scope given, else for create
// the workspace's, else the folder the skill is found in.
func targetFolder(home, workspace string, in manageIn) (Folder, error) {
	if in.Scope != "" {
		return FolderOf(home, workspace, in.Scope)
	}
	if in.Action != "create" {
		for _, sk := range Scan(home, workspace).Skills {
			if sk.Name == in.Name && !sk.Shadowed && filepath.Base(sk.Dir) == in.Name {
				return FolderOf(home, workspace, sk.Scope)
			}
		}
	}
	return FolderOf(home, workspace, ScopeWorkspace)
}

func create(ctx context.Context, c *tool.Context, f Folder, in manageIn) error {
	if strings.TrimSpace(in.Description) == "" {
		return errors.New("give a description: what the skill does and when to use it")
	}
	if _, err := os.Lstat(filepath.Join(f.Dir(), in.Name)); err == nil {
		return fmt.Errorf("%s already exists: change it with edit", filepath.Join(f.Dir(), in.Name))
	}
	desc, _ := json.Marshal(strings.Join(strings.Fields(in.Description), " ")) // a JSON string is a YAML string
	text := fmt.Sprintf("---\nname: %s\ndescription: %s\n---\n\n%s\n", in.Name, desc, strings.TrimSpace(in.Body))
	if _, _, err := Parse([]byte(text), in.Name); err != nil {
		return fmt.Errorf("the skill would not load: %v", err)
	}
	return write(ctx, c, f, in.Name, FileName, []byte(text))
}

func edit(ctx context.Context, c *tool.Context, f Folder, in manageIn) error {
	if in.OldString == "" {
		return errors.New("give oldString: the text of SKILL.md to replace, exactly as it is")
	}
	root, err := f.Open()
	if err != nil {
		return fmt.Errorf("open %s: %w", f.Dir(), err)
	}
	data, err := readFile(root, filepath.Join(in.Name, FileName), MaxSkillBytes)
	root.Close()
	if err != nil {
		return err
	}
	switch n := strings.Count(string(data), in.OldString); n {
	case 1:
	case 0:
		return fmt.Errorf("oldString is not in %s: load the skill and copy the text exactly", FileName)
	default:
		return fmt.Errorf("oldString is in %s %d times: give more of the text around it", FileName, n)
	}
	text := strings.Replace(string(data), in.OldString, in.NewString, 1)
	if _, _, err := Parse([]byte(text), in.Name); err != nil {
		return fmt.Errorf("the skill would not load after this edit: %v", err)
	}
	return write(ctx, c, f, in.Name, FileName, []byte(text))
}

// writeOther writes or removes a file of the skill other than SKILL.md.
func writeOther(ctx context.Context, c *tool.Context, f Folder, in manageIn) error {
	rel := filepath.Clean(filepath.FromSlash(in.Path))
	switch {
	case in.Path == "" || filepath.IsAbs(rel) || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)):
		return fmt.Errorf("path %q is not a file inside the skill's folder", in.Path)
	case rel == FileName:
		return errors.New("change SKILL.md with create or edit, which check that it still loads")
	}
	if _, err := os.Lstat(filepath.Join(f.Dir(), in.Name, FileName)); err != nil {
		return fmt.Errorf("there is no skill %s in %s: create it first", in.Name, f.Dir())
	}
	if in.Action == "write_file" {
		return write(ctx, c, f, in.Name, rel, []byte(in.Content))
	}
	if err := askWrite(ctx, c, f, in.Name, rel, "edit"); err != nil {
		return err
	}
	root, err := f.Open()
	if err != nil {
		return fmt.Errorf("open %s: %w", f.Dir(), err)
	}
	defer root.Close()
	path := filepath.Join(f.Dir(), in.Name, rel)
	before, err := tool.StateOf(path, maxUndoBytes)
	if err != nil {
		return err
	}
	err = root.Remove(filepath.Join(in.Name, rel))
	record(c, toolfs.OpRemove, path, before, err)
	return err
}

// maxUndoBytes bounds what the ledger keeps of a file a write replaces: a larger one is
// recorded as one Restore cannot put back.
const maxUndoBytes = 8 << 20

// touched are the paths a write of rel in the skill's folder changes below the skills
// folder's root — each folder it makes, then the file — each with what stands there now.
// All go on the ledger: Restore puts back the first (which removes what the write made
// beneath it), and checks each against what the turn left there.
func touched(f Folder, name, rel string) ([]string, []*tool.FileState, error) {
	var paths []string
	var before []*tool.FileState
	path := f.Root
	for _, part := range strings.Split(filepath.Join(f.Rel, name, rel), string(filepath.Separator)) {
		path = filepath.Join(path, part)
		if len(paths) > 0 {
			paths, before = append(paths, path), append(before, &tool.FileState{}) // below a missing folder
			continue
		}
		if _, err := os.Lstat(path); err == nil && path != filepath.Join(f.Dir(), name, rel) {
			continue
		}
		st, err := tool.StateOf(path, maxUndoBytes)
		if err != nil {
			return nil, nil, err
		}
		paths, before = append(paths, path), append(before, st)
	}
	return paths, before, nil
}

// record puts a change skill_manage made on the turn's ledger, with what stood there
// before, so Restore of the turn undoes it like any file the turn changed. A failed write
// changed nothing that matters (its temporary file is gone) and keeps no undo data: Restore
// skips it rather than act on a path the write was refused.
func record(c *tool.Context, op, path string, before *tool.FileState, err error) {
	ch := tool.Change{Path: path, Tool: c.Tool, CallID: c.CallID, Op: op, Disk: err == nil, OK: err == nil}
	if err != nil {
		ch.Error = err.Error()
	} else {
		ch.Before = before
	}
	c.Ledger.Record(ch)
}

// write asks the person, then writes rel in the skill's folder (made when missing) and puts
// the change on the turn's ledger (record).
func write(ctx context.Context, c *tool.Context, f Folder, name, rel string, data []byte) error {
	if err := askWrite(ctx, c, f, name, rel, "write"); err != nil {
		return err
	}
	paths, before, err := touched(f, name, rel)
	if err != nil {
		return err
	}
	err = writeIn(f, name, rel, data)
	for i, p := range paths {
		op := toolfs.OpMkdir
		if i == len(paths)-1 {
			op = toolfs.OpWrite
		}
		record(c, op, p, before[i], err)
	}
	return err
}

// writeIn writes rel in the skill's folder (made when missing) through an os.Root of the
// skills folder, reached from the trusted root: a link that leads out is refused. The file
// is written whole under a new name and renamed over rel, so a reader (the next turn's
// scan) sees the old or the new file, never a part.
func writeIn(f Folder, name, rel string, data []byte) error {
	if f.Scope == ScopeHome {
		if err := os.MkdirAll(f.Root, 0o700); err != nil { // jean2's home, made as jean2 makes it
			return fmt.Errorf("make %s: %w", f.Root, err)
		}
	}
	top, err := os.OpenRoot(f.Root)
	if err != nil {
		return fmt.Errorf("open %s: %w", f.Root, err)
	}
	defer top.Close()
	dir := filepath.Join(f.Rel, name, filepath.Dir(rel))
	if err := top.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("make %s: %w", filepath.Join(f.Root, dir), err)
	}
	root, err := top.OpenRoot(filepath.Join(f.Rel, name))
	if err != nil {
		return fmt.Errorf("open %s: %w", filepath.Join(f.Root, f.Rel, name), err)
	}
	defer root.Close()
	tmp := filepath.Join(filepath.Dir(rel), fsutil.RandomName("."+filepath.Base(rel)+".tmp-", ""))
	fh, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(f.Dir(), name, rel), err)
	}
	_, werr := fh.Write(data)
	if err := errors.Join(werr, fh.Close()); err != nil {
		_ = root.Remove(tmp)
		return fmt.Errorf("write %s: %w", filepath.Join(f.Dir(), name, rel), err)
	}
	if err := root.Rename(tmp, rel); err != nil {
		_ = root.Remove(tmp)
		return fmt.Errorf("write %s: %w", filepath.Join(f.Dir(), name, rel), err)
	}
	return nil
}

// ErrRejected is the error of a write the person refused.
var ErrRejected = errors.New(tool.UserRejection + ": the person did not allow this change to the skill")

// askWrite asks the person to allow a write of a skill's file. A skill in $JEAN2_HOME joins
// every workspace's instructions, so the host's assessment makes that ask a person's only.
func askWrite(ctx context.Context, c *tool.Context, f Folder, name, rel, op string) error {
	path := filepath.Join(f.Dir(), name, rel)
	p := tool.FilePermission{Path: path, Operation: op, Risk: "medium",
		Reason: "Skills join the instructions of later sessions."}
	if f.Scope == ScopeHome {
		p.Risk, p.IsOutsideWorkspace = "high", true
		p.Reason = "Skills in jean2's home join the instructions of every workspace's later sessions."
	}
	ans, err := c.Asker.Ask(ctx, tool.CreateFilePermissionAsk(p))
	if err != nil {
		return fmt.Errorf("%w (%v)", ErrRejected, err)
	}
	var yes bool
	if json.Unmarshal(ans, &yes) != nil || !yes {
		return ErrRejected
	}
	return nil
}

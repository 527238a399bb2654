package builtin

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/jean2/jean2/tool"
)

const (
	lsLimit = 100
	// lsCountLimit caps how far ls goes on counting past what it shows.
	lsCountLimit = 10000
)

// lsIgnored are names ls hides besides skipDirs: system litter and env files.
var lsIgnored = map[string]bool{".DS_Store": true, "Thumbs.db": true, ".env": true, ".env.local": true, ".env.production": true, ".env.development": true}

type lsIn struct {
	Path       string   `json:"path"`
	Ignore     []string `json:"ignore"`
	ShowHidden bool     `json:"showHidden"`
}

type lsOut struct {
	Content   string `json:"content"`
	Truncated bool   `json:"_truncated,omitempty"`
	Count     int    `json:"_count"`
}

// Ls is ls: a folder's files as a tree.
func Ls() tool.Tool {
	return define(tool.Definition{
		Name: "ls",
		Description: "List directory contents with tree formatting.\n\nWhen to use:\n- Exploring project structure for the first time\n- Understanding directory layout\n- Viewing file organization\n\nWhen NOT to use:\n- Finding specific files: Use glob tool instead\n- Searching file contents: Use grep tool instead\n\n" +
			"Parameters:\n- path (optional): Directory to list. Defaults to workspace root.\n- ignore (optional): Additional directory/file names to ignore.\n- showHidden (optional): Show hidden files (dotfiles). Default false.\n\n" +
			fmt.Sprintf("Note: Output is limited to %d entries. Common directories (node_modules, .git, dist, build, target, vendor, .venv, coverage, etc.) are automatically hidden.", lsLimit),
		InputSchema: []byte(`{"type":"object","properties":{
			"path":{"type":"string","description":"The directory to list. Supports relative paths from workspace, absolute paths, or home paths. Defaults to workspace root."},
			"ignore":{"type":"array","items":{"type":"string"},"description":"List of additional directory or file names to ignore."},
			"showHidden":{"type":"boolean","description":"Whether to show hidden files (starting with .). Default false."}},
			"required":[]}`),
		Timeout:     30000,
		Annotations: readOnly(),
	}, ls)
}

func ls(ctx context.Context, c *tool.Context, in lsIn) tool.Result {
	dir := c.Workspace
	if in.Path != "" {
		dir = c.ResolvePath(in.Path)
	}
	if c.IsBlockedPath(dir) {
		return failf("Listing system directories is not allowed: %s", in.Path)
	}
	if err := approveTree(ctx, c, dir, "Listing a directory outside the workspace requires approval."); err != nil {
		return rejection(err)
	}
	st, err := c.FS.Stat(ctx, dir)
	if err != nil {
		return failf("Directory not found: %s", dir)
	}
	if !st.IsDirectory {
		return failf("Not a directory: %s", dir)
	}
	extra := map[string]bool{}
	for _, n := range in.Ignore {
		extra[n] = true
	}
	var files []string
	count := 0
	var walk func(rel string)
	walk = func(rel string) {
		entries, err := c.FS.ReadDir(ctx, filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return
		}
		sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
		for _, e := range entries {
			if count >= lsCountLimit || ctx.Err() != nil {
				return
			}
			if (!in.ShowHidden && strings.HasPrefix(e.Name, ".")) || skipDirs[e.Name] || lsIgnored[e.Name] || extra[e.Name] {
				continue
			}
			child := e.Name
			if rel != "" {
				child = rel + "/" + e.Name
			}
			if e.IsDirectory {
				walk(child)
				continue
			}
			count++
			if len(files) < lsLimit {
				files = append(files, child)
			}
		}
	}
	walk("")
	content := renderTree(files)
	truncated := count > len(files)
	if truncated {
		more := fmt.Sprint(count)
		if count >= lsCountLimit {
			more = fmt.Sprintf("more than %d", lsCountLimit)
		}
		content += fmt.Sprintf("\n\n(Showing %d of %s entries. Use grep or glob for targeted searching.)", len(files), more)
	}
	label := in.Path
	if label == "" {
		label = "workspace"
	}
	return ok(lsOut{Content: content, Truncated: truncated, Count: count}, none("Ls: %s", label))
}

// renderTree draws files (slash paths) as a tree under "./": folders first, then files,
// each sorted by name.
func renderTree(files []string) string {
	type node struct {
		dirs  map[string]*node
		files []string
	}
	root := &node{dirs: map[string]*node{}}
	for _, f := range files {
		parts := strings.Split(f, "/")
		n := root
		for _, d := range parts[:len(parts)-1] {
			if n.dirs[d] == nil {
				n.dirs[d] = &node{dirs: map[string]*node{}}
			}
			n = n.dirs[d]
		}
		n.files = append(n.files, parts[len(parts)-1])
	}
	var b strings.Builder
	b.WriteString("./")
	var draw func(n *node, prefix string)
	draw = func(n *node, prefix string) {
		names := make([]string, 0, len(n.dirs))
		for d := range n.dirs {
			names = append(names, d)
		}
		sort.Strings(names)
		sort.Strings(n.files)
		total := len(names) + len(n.files)
		i := 0
		branch := func() (string, string) {
			i++
			if i == total {
				return "└── ", "    "
			}
			return "├── ", "│   "
		}
		for _, d := range names {
			br, cont := branch()
			b.WriteString("\n" + prefix + br + d + "/")
			draw(n.dirs[d], prefix+cont)
		}
		for _, f := range n.files {
			br, _ := branch()
			b.WriteString("\n" + prefix + br + f)
		}
	}
	draw(root, "    ") // the catalogue indents the root's children
	return b.String()
}

package builtin

import (
	"context"
	"path"
	"path/filepath"
	"strings"

	gitignore "github.com/sabhiram/go-gitignore"

	"github.com/jean2/jean2/tool"
)

// skipDirs are folders glob, grep and ls never enter: dependencies, build output, caches
// and version control, as the catalogue tools skip them.
var skipDirs = map[string]bool{
	"node_modules": true, ".git": true, "__pycache__": true, "dist": true, "build": true, "target": true,
	"vendor": true, "bin": true, "obj": true, ".idea": true, ".vscode": true, ".zig-cache": true,
	"zig-out": true, ".coverage": true, "coverage": true, "tmp": true, "temp": true, ".cache": true,
	"cache": true, "logs": true, ".venv": true, "venv": true, "env": true, ".next": true, ".nuxt": true,
	".output": true, ".svelte-kit": true, ".turbo": true,
}

// ignoreFile is one .gitignore and the folder (relative to the walk's root, "" for the
// root) whose subtree it governs.
type ignoreFile struct {
	base string
	gi   *gitignore.GitIgnore
}

// walker walks a folder through ctx.FS, so the host's policy holds for every folder it
// lists and every file it reads. It honours each .gitignore it meets (in the root and any
// folder below it) for the subtree of that folder, and skips skipDirs.
type walker struct {
	c        *tool.Context
	root     string
	maxDepth int // folders below the root entered; < 0 for no limit
	// gitignore says whether .gitignore files are honoured.
	gitignore bool
	// stop, when it returns true, ends the walk early (a cap reached).
	stop func() bool
}

// walk calls visit for every file (not folder) under the root, with its path relative to
// the root (slash-separated). Folders the file system refuses or that vanish are passed
// over; the walk's own cancellation ends it.
func (w *walker) walk(ctx context.Context, visit func(rel string)) error {
	return w.dir(ctx, "", 0, nil, visit)
}

func (w *walker) dir(ctx context.Context, rel string, depth int, ignores []ignoreFile, visit func(string)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	entries, err := w.c.FS.ReadDir(ctx, filepath.Join(w.root, filepath.FromSlash(rel)))
	if err != nil {
		return nil // unreadable or refused: passed over, as the catalogue tools do
	}
	if w.gitignore {
		for _, e := range entries {
			if e.Name == ".gitignore" && e.IsFile {
				data, err := w.c.FS.ReadFile(ctx, filepath.Join(w.root, filepath.FromSlash(rel), ".gitignore"))
				if err == nil {
					ignores = append(ignores[:len(ignores):len(ignores)], ignoreFile{base: rel, gi: gitignore.CompileIgnoreLines(strings.Split(string(data), "\n")...)})
				}
				break
			}
		}
	}
	for _, e := range entries {
		if w.stop != nil && w.stop() {
			return nil
		}
		child := e.Name
		if rel != "" {
			child = rel + "/" + e.Name
		}
		if e.IsDirectory {
			if skipDirs[e.Name] || ignored(ignores, child, true) {
				continue
			}
			if w.maxDepth >= 0 && depth >= w.maxDepth {
				continue
			}
			if err := w.dir(ctx, child, depth+1, ignores, visit); err != nil {
				return err
			}
			continue
		}
		if e.IsFile && !ignored(ignores, child, false) {
			visit(child)
		}
	}
	return nil
}

// ignored reports whether a .gitignore governing rel excludes it; a folder is also tested
// with a trailing slash, which is how "name/" patterns name folders only.
func ignored(ignores []ignoreFile, rel string, dir bool) bool {
	for _, f := range ignores {
		sub := rel
		if f.base != "" {
			sub = strings.TrimPrefix(rel, f.base+"/")
		}
		if f.gi.MatchesPath(sub) || (dir && f.gi.MatchesPath(sub+"/")) {
			return true
		}
	}
	return false
}

// patternDepth is how many folders below the root a glob can reach: unlimited with "**".
func patternDepth(pattern string) int {
	if strings.Contains(pattern, "**") {
		return -1
	}
	return strings.Count(path.Clean(pattern), "/")
}

package builtin

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/jean2/jean2/tool"
)

// globMaxFiles caps glob's list; the rest are counted and said.
const globMaxFiles = 1000

type globIn struct {
	Pattern string   `json:"pattern"`
	Path    string   `json:"path"`
	Ignore  []string `json:"ignore"`
}

type globOut struct {
	Files     []string `json:"files"`
	Truncated bool     `json:"truncated,omitempty"`
	More      int      `json:"more,omitempty"`
}

// Glob is glob: files matching a pattern, most recently changed first.
func Glob() tool.Tool {
	return define(tool.Definition{
		Name: "glob",
		Description: "Find files matching a glob pattern. Returns matching file paths sorted by modification time (newest first).\n\n" +
			"When to use:\n- Finding files by name patterns (e.g., all TypeScript files)\n- Locating specific file types in a project\n\n" +
			"When NOT to use:\n- Searching file contents: Use grep tool instead\n- Exploring unknown structure: Use ls tool instead\n\n" +
			"Pattern examples:\n- `**/*.ts` - All TypeScript files recursively\n- `src/**/*.tsx` - All TSX files in src directory\n- `*.{js,ts}` - All JS and TS files in the folder (brace expansion)\n- `[abc]*.ts` - TS files starting with a, b, or c (character class)\n- `package.json` - Specific file\n\n" +
			fmt.Sprintf("Files ignored by .gitignore and folders such as node_modules, .git, dist and build are skipped. At most %d files are listed; the rest are counted.", globMaxFiles),
		InputSchema: []byte(`{"type":"object","properties":{
			"pattern":{"type":"string","description":"The glob pattern to match. Supports *, **, ?, brace expansion {a,b} and character classes [a-z]."},
			"path":{"type":"string","description":"The directory to search in. Supports relative paths from workspace, absolute paths, or home paths. Defaults to workspace root."},
			"ignore":{"type":"array","items":{"type":"string"},"description":"Glob patterns to exclude from results. For example, [\"*.test.ts\", \"**/fixtures/**\"]."}},
			"required":["pattern"]}`),
		Timeout:     30000,
		Annotations: readOnly(),
	}, glob)
}

func glob(ctx context.Context, c *tool.Context, in globIn) tool.Result {
	searchPath := in.Path
	if searchPath == "" {
		searchPath = c.Workspace
	}
	root := c.ResolvePath(searchPath)
	if c.IsBlockedPath(root) {
		return failf("Globbing system directories is not allowed: %s", searchPath)
	}
	if err := approveTree(ctx, c, root, "Globbing outside the workspace requires approval."); err != nil {
		return rejection(err)
	}
	if !doublestar.ValidatePattern(in.Pattern) {
		return failf("Invalid glob pattern: %q", in.Pattern)
	}
	for _, p := range in.Ignore {
		if !doublestar.ValidatePattern(p) {
			return failf("Invalid ignore pattern: %q", p)
		}
	}
	pattern := strings.TrimPrefix(in.Pattern, "./")
	// A pattern without wildcards names one file.
	if !strings.ContainsAny(pattern, "*?[{") {
		files := []string{}
		if there, _ := c.FS.Exists(ctx, filepath.Join(root, pattern)); there {
			files = append(files, in.Pattern)
		}
		return ok(globOut{Files: files}, none("Glob: %q (%d file%s)", in.Pattern, len(files), plural(len(files))))
	}
	hits, err := globWalk(ctx, c, root, pattern, in.Ignore)
	if err != nil {
		return failf("glob %s: %v", root, err)
	}
	globModTimes(ctx, c, root, hits)
	out := globNewestFirst(hits)
	msg := fmt.Sprintf("Glob: %q (%d files)", in.Pattern, len(hits))
	if out.Truncated {
		msg = fmt.Sprintf("Glob: %q (%d files shown, %d more: narrow the pattern or the path)", in.Pattern, len(out.Files), out.More)
	}
	return ok(out, none("%s", msg))
}

type globHit struct {
	rel string
	mod time.Time
}

// globWalk lists the files under root matching pattern and no ignore pattern, walking no
// deeper than the pattern can reach.
func globWalk(ctx context.Context, c *tool.Context, root, pattern string, ignore []string) ([]globHit, error) {
	var hits []globHit
	w := &walker{c: c, root: root, maxDepth: patternDepth(pattern), gitignore: true}
	err := w.walk(ctx, func(rel string) {
		if !doublestar.MatchUnvalidated(pattern, rel) {
			return
		}
		for _, ig := range ignore {
			if doublestar.MatchUnvalidated(ig, rel) || doublestar.MatchUnvalidated(ig, filepath.Base(rel)) {
				return
			}
		}
		hits = append(hits, globHit{rel: rel})
	})
	return hits, err
}

// globModTimes fills in each hit's modification time through ctx.FS, a few at a time; a
// file that cannot be stat'ed keeps the zero time and sorts last.
func globModTimes(ctx context.Context, c *tool.Context, root string, hits []globHit) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range hits {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if st, err := c.FS.Stat(ctx, filepath.Join(root, filepath.FromSlash(hits[i].rel))); err == nil {
				hits[i].mod = st.ModifiedAt
			}
		}()
	}
	wg.Wait()
}

// globNewestFirst sorts the hits newest first (by name among equals) and keeps the first
// globMaxFiles, counting the rest.
func globNewestFirst(hits []globHit) globOut {
	sort.SliceStable(hits, func(i, j int) bool {
		if !hits[i].mod.Equal(hits[j].mod) {
			return hits[i].mod.After(hits[j].mod)
		}
		return hits[i].rel < hits[j].rel
	})
	out := globOut{Files: make([]string, 0, min(len(hits), globMaxFiles))}
	for i, h := range hits {
		if i == globMaxFiles {
			out.Truncated, out.More = true, len(hits)-globMaxFiles
			break
		}
		out.Files = append(out.Files, h.rel)
	}
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

package builtin

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/jean2/jean2/tool"
)

const (
	grepMaxMatches  = 5000
	grepMaxFileSize = 10 << 20
	grepMaxLineLen  = 2000
)

// grepBinaryExts are skipped without reading.
var grepBinaryExts = map[string]bool{
	".png": true, ".jpg": true, ".jpeg": true, ".gif": true, ".ico": true, ".svg": true, ".woff": true, ".woff2": true,
	".ttf": true, ".eot": true, ".zip": true, ".tar": true, ".gz": true, ".7z": true, ".rar": true, ".pdf": true,
	".exe": true, ".dll": true, ".so": true, ".dylib": true, ".wasm": true, ".mp4": true, ".mp3": true, ".wav": true,
	".avi": true, ".mov": true, ".mkv": true, ".webp": true, ".webm": true, ".sqlite": true, ".db": true, ".bin": true, ".dat": true,
}

type grepIn struct {
	Pattern string   `json:"pattern"`
	Path    string   `json:"path"`
	Include string   `json:"include"`
	Ignore  []string `json:"ignore"`
}

type grepMatch struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Content string `json:"content"`
}

type grepOut struct {
	Matches   []grepMatch `json:"matches"`
	Truncated bool        `json:"truncated,omitempty"`
	More      int         `json:"more,omitempty"`
}

// Grep is grep: lines matching a regular expression, in a file or a folder's files.
func Grep() tool.Tool {
	return define(tool.Definition{
		Name: "grep",
		Description: "Search for text patterns in files using regular expressions.\n\n" +
			"When to use:\n- Finding code containing specific patterns\n- Searching for function/class definitions\n- Locating usage of variables or imports\n\n" +
			"When NOT to use:\n- Finding files by name: Use glob tool instead\n- Simple file reading: Use read-file tool instead\n\n" +
			"Pattern examples:\n- `function\\s+\\w+` - Function declarations\n- `import.*from` - Import statements\n- `TODO|FIXME` - Todo comments\n\n" +
			"Usage:\n- pattern (required): Regex pattern to search for (RE2 syntax: no lookaround or backreferences)\n- path (required): File or directory to search in. Supports relative paths from workspace, absolute paths, or home paths.\n- include (optional): File pattern to filter (e.g., `*.ts`, `*.{ts,tsx}`).\n- ignore (optional): Glob patterns to exclude from results.\n\n" +
			fmt.Sprintf("Files ignored by .gitignore, binary files and folders such as node_modules and .git are skipped. Returns file paths and line numbers with matching content, at most %d matches; the rest are counted.", grepMaxMatches),
		InputSchema: []byte(`{"type":"object","properties":{
			"pattern":{"type":"string","description":"The regex pattern to search for"},
			"path":{"type":"string","description":"The file or directory to search in. Supports relative paths from workspace, absolute paths, or home paths."},
			"include":{"type":"string","description":"File pattern to include. Supports brace expansion {a,b} and character classes [a-z]."},
			"ignore":{"type":"array","items":{"type":"string"},"description":"Glob patterns to exclude from results. For example, [\"*.test.ts\", \"**/fixtures/**\"]."}},
			"required":["pattern","path"]}`),
		Timeout:     30000,
		Annotations: readOnly(),
	}, grep)
}

func grep(ctx context.Context, c *tool.Context, in grepIn) tool.Result {
	target := in.Path
	if target == "" {
		target = c.Workspace
	}
	root := c.ResolvePath(target)
	if refused := approveGrepRoot(ctx, c, root, target); refused != nil {
		return *refused
	}
	re, whole, err := compileGrep(in)
	if err != nil {
		return failf("%s", err)
	}
	st, err := c.FS.Stat(ctx, root)
	if err != nil {
		if isNotExist(err) {
			return failf("Path not found: %s", root)
		}
		return failf("%v", err)
	}
	pool := startGrepPool(ctx, c, re, whole)
	var walkErr error
	if st.IsDirectory {
		walkErr = walkGrepFiles(ctx, c, root, in, pool.send)
	} else {
		pool.send(ctx, root, filepath.Base(root))
	}
	results := pool.wait()
	if walkErr != nil {
		return failf("grep %s: %v", root, walkErr)
	}
	if err := ctx.Err(); err != nil {
		return failf("grep %s: %v", root, err)
	}
	out := collectGrep(results)
	msg := fmt.Sprintf("Grep: %q (%d matches)", in.Pattern, len(out.Matches))
	if out.Truncated {
		msg = fmt.Sprintf("Grep: %q (%d matches shown, %d more: narrow the pattern, path or include)", in.Pattern, len(out.Matches), out.More)
	}
	return ok(out, none("%s", msg))
}

// approveGrepRoot refuses a system folder and asks for one outside the workspace or one
// that looks like it holds secrets; nil means the search may go on.
func approveGrepRoot(ctx context.Context, c *tool.Context, root, target string) *tool.Result {
	if c.IsBlockedPath(root) {
		r := failf("Searching in system directories is not allowed: %s", target)
		return &r
	}
	if err := approveTree(ctx, c, root, "Searching in files outside the workspace requires approval."); err != nil {
		r := rejection(err)
		return &r
	}
	if c.IsSensitivePath(root) {
		a := tool.CreateFilePermissionAsk(tool.FilePermission{Path: root, Operation: "read", Risk: "medium", IsSensitiveFile: true,
			Reason: "Searching in sensitive directories requires approval."})
		if err := askYes(ctx, c, a); err != nil {
			r := rejection(err)
			return &r
		}
	}
	return nil
}

// compileGrep compiles the pattern per line and, where it can, per file, and checks the
// include pattern; the error is the message a model reads.
func compileGrep(in grepIn) (re, whole *regexp.Regexp, err error) {
	re, err = regexp.Compile(in.Pattern)
	if err != nil {
		return nil, nil, fmt.Errorf("Invalid regex pattern: %v", err)
	}
	// The whole-file test that lets most files be passed over in one pass: the pattern with
	// ^ and $ at every line boundary, which matches wherever one of its lines does. \A and
	// \z mean a line's ends per line but the file's ends here, so they go without it.
	if !strings.Contains(in.Pattern, `\A`) && !strings.Contains(in.Pattern, `\z`) {
		whole, _ = regexp.Compile("(?m)" + in.Pattern)
	}
	if in.Include != "" && !doublestar.ValidatePattern(in.Include) {
		return nil, nil, fmt.Errorf("Invalid include pattern: %q", in.Include)
	}
	return re, whole, nil
}

// walkGrepFiles sends every file under root that grep reads: not ignored by .gitignore,
// not binary by its extension, matching include and no ignore pattern.
func walkGrepFiles(ctx context.Context, c *tool.Context, root string, in grepIn, send func(ctx context.Context, full, rel string)) error {
	w := &walker{c: c, root: root, maxDepth: -1, gitignore: true}
	return w.walk(ctx, func(rel string) {
		if grepBinaryExts[strings.ToLower(filepath.Ext(rel))] {
			return
		}
		if in.Include != "" && !doublestar.MatchUnvalidated(in.Include, rel) && !doublestar.MatchUnvalidated(in.Include, filepath.Base(rel)) {
			return
		}
		for _, ig := range in.Ignore {
			if doublestar.MatchUnvalidated(ig, rel) || doublestar.MatchUnvalidated(ig, filepath.Base(rel)) {
				return
			}
		}
		send(ctx, filepath.Join(root, filepath.FromSlash(rel)), rel)
	})
}

// grepPool searches files while the walk goes on, in parallel, each through ctx.FS;
// results are kept by walk index so the answer does not depend on scheduling.
type grepPool struct {
	mu      sync.Mutex
	results []grepFound // by walk index
	next    chan grepJob
	wg      sync.WaitGroup
}

type grepFound struct {
	matches []grepMatch
	count   int
}

type grepJob struct {
	i         int
	full, rel string
}

// startGrepPool starts the searchers; they stop when wait closes the queue.
func startGrepPool(ctx context.Context, c *tool.Context, re, whole *regexp.Regexp) *grepPool {
	p := &grepPool{next: make(chan grepJob, 64)}
	for range max(2, runtime.GOMAXPROCS(0)) {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for j := range p.next {
				m, n := grepFile(ctx, c, j.full, j.rel, re, whole)
				if n == 0 {
					continue
				}
				p.mu.Lock()
				p.results[j.i] = grepFound{m, n}
				p.mu.Unlock()
			}
		}()
	}
	return p
}

// send queues a file in walk order; a cancelled call drops it.
func (p *grepPool) send(ctx context.Context, full, rel string) {
	p.mu.Lock()
	i := len(p.results)
	p.results = append(p.results, grepFound{})
	p.mu.Unlock()
	select {
	case p.next <- grepJob{i, full, rel}:
	case <-ctx.Done():
	}
}

// wait closes the queue, waits for the searchers and returns the results in walk order.
func (p *grepPool) wait() []grepFound {
	close(p.next)
	p.wg.Wait()
	return p.results
}

// collectGrep keeps the first grepMaxMatches matches in walk order and counts the rest.
func collectGrep(results []grepFound) grepOut {
	out := grepOut{Matches: []grepMatch{}}
	total := 0
	for _, r := range results {
		total += r.count
		for _, m := range r.matches {
			if len(out.Matches) < grepMaxMatches {
				out.Matches = append(out.Matches, m)
			}
		}
	}
	if total > len(out.Matches) {
		out.Truncated, out.More = true, total-len(out.Matches)
	}
	return out
}

// grepFile returns a file's matching lines (at most grepMaxMatches) and how many lines
// match in all. A file too large, unreadable or binary (a NUL in its first 8 KiB) has none.
// The file is read without a stat first: each ctx.FS operation checks the whole path
// again, and a stat per file would double the cost of a search; the size cap is applied
// to what was read (ctx.FS itself refuses files over its own, larger, cap).
func grepFile(ctx context.Context, c *tool.Context, full, rel string, re, whole *regexp.Regexp) ([]grepMatch, int) {
	data, err := c.FS.ReadFile(ctx, full)
	if err != nil || len(data) > grepMaxFileSize || bytes.IndexByte(data[:min(len(data), 8192)], 0) >= 0 {
		return nil, 0
	}
	// Most files do not match at all: one pass over the whole file decides that.
	if whole != nil && !whole.Match(data) {
		return nil, 0
	}
	var out []grepMatch
	n, line := 0, 0
	for rest := data; rest != nil; {
		var l []byte
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			l, rest = rest[:i], rest[i+1:]
		} else {
			l, rest = rest, nil
		}
		line++
		if !re.Match(l) {
			continue
		}
		n++
		if len(out) < grepMaxMatches {
			text := strings.TrimRight(string(l), " \t\r")
			if len(text) > grepMaxLineLen {
				text = string(truncateLine([]byte(text)))
			}
			out = append(out, grepMatch{File: rel, Line: line, Content: text})
		}
	}
	return out, n
}

package server

import (
	"bytes"
	"context"
	"log/slog"
	"os/exec"
	"path"
	"strings"
	"time"
)

// gitWait bounds one git command of a listing: marks are a help, never worth a hung page.
const gitWait = 5 * time.Second

// gitMarks is what `git status` says of a workspace's files, by path relative to the
// workspace folder.
type gitMarks struct {
	repo  bool              // the workspace is in a git repository
	files map[string]string // path → modified, added, untracked or deleted
}

// folder is "changed" when the folder rel (relative to the workspace) holds a marked file.
func (g gitMarks) folder(rel string) string {
	prefix := rel + "/"
	for p := range g.files {
		if strings.HasPrefix(p, prefix) {
			return "changed"
		}
	}
	return ""
}

// deletedIn are the files git knows as deleted directly in folder rel that the listing
// (on disk) does not hold: a deleted file is gone from the disk but shown, marked.
func (g gitMarks) deletedIn(rel string, listed []fileEntry) []fileEntry {
	var out []fileEntry
	for p, st := range g.files {
		dir := path.Dir(p)
		if dir == "." {
			dir = ""
		}
		if st != "deleted" || dir != rel {
			continue
		}
		name := path.Base(p)
		seen := false
		for _, e := range listed {
			seen = seen || e.Name == name
		}
		if !seen {
			out = append(out, fileEntry{Name: name, Path: p, Type: "file", Git: "deleted"})
		}
	}
	return out
}

// gitStatus runs `git status --porcelain=v2 -z` in the workspace folder. A folder outside
// any repository, a missing git or a failure gives no marks (logged, not an error).
//
// The repository's own configuration is not trusted: a tool may write .git/config, and git
// runs commands it names (core.fsmonitor, a filter driver's clean or process command when
// it compares a changed file) in the server's own process tree, outside every sandbox. So
// git runs without the system and global configuration, with fsmonitor off, every filter
// driver the configuration names overridden by an empty process (git then applies none),
// submodules ignored, and no optional locks (a listing never writes the index).
func gitStatus(ctx context.Context, dir string, log *slog.Logger) gitMarks {
	git, err := exec.LookPath("git")
	if err != nil {
		return gitMarks{}
	}
	ctx, cancel := context.WithTimeout(ctx, gitWait)
	defer cancel()
	run := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, git, args...)
		cmd.Dir = dir
		cmd.Env = []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_OPTIONAL_LOCKS=0",
			"GIT_TERMINAL_PROMPT=0", "LC_ALL=C", "HOME=/nonexistent", "PATH=/usr/bin:/bin"}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil && stderr.Len() > 0 {
			return out, &gitError{args: args, stderr: strings.TrimSpace(stderr.String()), err: err}
		}
		return out, err
	}
	prefix, err := run("rev-parse", "--show-prefix")
	if err != nil {
		return gitMarks{} // not a repository (or not one git will read)
	}
	args := []string{"-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null"}
	if names, err := run("config", "-z", "--name-only", "--get-regexp", `^filter\.`); err == nil {
		for _, n := range strings.Split(string(names), "\x00") {
			if driver, ok := strings.CutPrefix(n, "filter."); ok && strings.Contains(driver, ".") {
				driver = driver[:strings.LastIndex(driver, ".")]
				args = append(args, "-c", "filter."+driver+".process=", "-c", "filter."+driver+".required=false")
			}
		}
	}
	args = append(args, "status", "--porcelain=v2", "-z", "--untracked-files=all", "--ignore-submodules=all", "--no-renames", "--", ".")
	out, err := run(args...)
	if err != nil {
		log.Warn("git status of a workspace failed; its files are listed without marks", "folder", dir, "error", err)
		return gitMarks{}
	}
	return gitMarks{repo: true, files: parsePorcelainV2(out, strings.TrimSpace(string(prefix)))}
}

// gitError is a git command that failed, with what it said.
type gitError struct {
	args   []string
	stderr string
	err    error
}

func (e *gitError) Error() string {
	return "git " + strings.Join(e.args, " ") + ": " + e.err.Error() + ": " + e.stderr
}

func (e *gitError) Unwrap() error { return e.err }

// parsePorcelainV2 reads `git status --porcelain=v2 -z --no-renames` into marks by path
// relative to prefix (the workspace folder's place in the repository, "sub/" or "").
func parsePorcelainV2(out []byte, prefix string) map[string]string {
	marks := map[string]string{}
	for _, rec := range strings.Split(string(out), "\x00") {
		var p, mark string
		switch {
		case strings.HasPrefix(rec, "? "):
			p, mark = rec[2:], "untracked"
		case strings.HasPrefix(rec, "1 "), strings.HasPrefix(rec, "u "):
			fields := strings.SplitN(rec, " ", 9)
			if rec[0] == 'u' {
				fields = strings.SplitN(rec, " ", 11)
			}
			if len(fields) < 9 {
				continue
			}
			p, mark = fields[len(fields)-1], entryMark(fields[1])
		default:
			continue // ignored files, headers
		}
		if rel, ok := strings.CutPrefix(p, prefix); ok && rel != "" {
			marks[rel] = mark
		}
	}
	return marks
}

// entryMark is the mark of a changed entry's XY (index, work tree) status.
func entryMark(xy string) string {
	switch {
	case strings.ContainsRune(xy, 'D'):
		return "deleted"
	case strings.HasPrefix(xy, "A"):
		return "added"
	default:
		return "modified"
	}
}

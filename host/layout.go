package host

import (
	"fmt"
	"os"
	"path/filepath"
)

// Layout is where jean2 keeps its files. Everything lives under Home ($JEAN2_HOME,
// default ~/.jean2) except the tools folder, which JEAN2_TOOLS_PATH may move.
type Layout struct {
	Home   string // $JEAN2_HOME
	Tools  string // tool folders
	Cache  string // bundles, definitions, runtime scripts, npm cache
	DotEnv string // values for the variables tools declare
	Temp   string // per-session temporary folders
	// Data holds each tool's own persistent folder (Data/<tool>), which the tool's workers
	// see as $JEAN2_HOME/data, as jean2's tools expect (ToolData).
	Data string
}

// LayoutFromEnv computes the layout from JEAN2_HOME and JEAN2_TOOLS_PATH (getenv is
// os.Getenv in production, a map in tests).
func LayoutFromEnv(getenv func(string) string) (Layout, error) {
	home := getenv("JEAN2_HOME")
	if home == "" {
		userHome, err := os.UserHomeDir()
		if err != nil {
			return Layout{}, fmt.Errorf("find home folder for ~/.jean2 (set JEAN2_HOME): %w", err)
		}
		home = filepath.Join(userHome, ".jean2")
	}
	home, err := filepath.Abs(home)
	if err != nil {
		return Layout{}, fmt.Errorf("JEAN2_HOME %q: %w", home, err)
	}
	l := Layout{
		Home:   home,
		Tools:  filepath.Join(home, "tools"),
		Cache:  filepath.Join(home, "cache"),
		DotEnv: filepath.Join(home, ".env"),
		Temp:   filepath.Join(home, "tmp"),
		Data:   filepath.Join(home, "data"),
	}
	if p := getenv("JEAN2_TOOLS_PATH"); p != "" {
		if l.Tools, err = filepath.Abs(p); err != nil {
			return Layout{}, fmt.Errorf("JEAN2_TOOLS_PATH %q: %w", p, err)
		}
	}
	return l, nil
}

// Ensure creates the folders of the layout that jean2 writes to.
func (l Layout) Ensure() error {
	for _, d := range []string{l.Home, l.Tools, l.Cache, l.Temp, l.Data} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return ExplainStorage("create its folder", d, fmt.Errorf("create %s: %w", d, err))
		}
	}
	return nil
}

// ToolData is the persistent folder of the tool named name, made when missing. Its workers
// see it, in their view of the machine, at Data ($JEAN2_HOME/data): each tool its own, and
// no tool another's. A Data that is not a real folder (a link) is refused.
func (l Layout) ToolData(name string) (string, error) {
	if l.Data == "" {
		return "", fmt.Errorf("tool %s: the layout has no data folder", name)
	}
	if err := os.MkdirAll(l.Data, 0o700); err != nil {
		return "", ExplainStorage("create its folder", l.Data, err)
	}
	root, err := os.OpenRoot(l.Data)
	if err != nil {
		return "", fmt.Errorf("tool %s: open %s: %w", name, l.Data, err)
	}
	defer root.Close()
	dir := safeName(name)
	if err := root.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return "", ExplainStorage("create its data folder", filepath.Join(l.Data, dir), err)
	}
	if fi, err := root.Lstat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("tool %s: its data folder %s is not a folder", name, filepath.Join(l.Data, dir))
	}
	return filepath.Join(l.Data, dir), nil
}

// SessionTemp is the temporary folder (ctx.fs.tempDir) of a session that belongs to no
// workspace ID (jean2 tools run), created on demand.
func (l Layout) SessionTemp(sessionID string) (string, error) {
	if !validID(sessionID) {
		return "", fmt.Errorf("session id %q is not valid: use letters, digits, '-' and '_' (at most 128)", sessionID)
	}
	return l.tempFolder(filepath.Join("sessions", sessionID))
}

// WorkspaceTemp is the folder that holds the temporary folders of a workspace's sessions
// (one folder each, named by the session's id) and of its sessionless calls (".runs").
// No worker may write it: a session's workers and commands write their session's folder
// alone (their TMPDIR and /tmp), each a tmpfs of SessionTempMB of its own (temp.go), as
// each session has workers of its own, in its cgroup (cgroups.go).
func (l Layout) WorkspaceTemp(workspaceID string) string {
	return filepath.Join(l.Temp, "workspaces", safeName(workspaceID))
}

// tempFolder creates the folder rel under Temp.
func (l Layout) tempFolder(rel string) (string, error) {
	dir := filepath.Join(l.Temp, rel)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", ExplainStorage("create a temporary folder", dir, fmt.Errorf("create session temp folder: %w", err))
	}
	return dir, nil
}

func validID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

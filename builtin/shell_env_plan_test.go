package builtin

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/sandbox"
)

// The plan of a command opens exactly its caches, its session folder and the git
// configuration in jean2's home (which is protected), and the toolchains of the person's
// home without their credentials or the home itself.
func TestShellPlanOpensCachesAndToolchainsOnly(t *testing.T) {
	root := policy.Real(t.TempDir())
	home := filepath.Join(root, "home")
	for _, rel := range []string{".cargo/bin/cargo", ".cargo/credentials.toml", ".pyenv/shims/python3", "bin/mine", "notes.txt", ".ssh/id_rsa"} {
		p := filepath.Join(home, rel)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("x"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	layout := host.Layout{Home: filepath.Join(home, ".jean2"), Tools: filepath.Join(home, ".jean2", "tools"), Cache: filepath.Join(home, ".jean2", "cache")}
	ws := filepath.Join(root, "ws")
	tmp := filepath.Join(layout.Home, "tmp", "s1")
	for _, d := range []string{ws, tmp, filepath.Join(layout.Home, "bin")} {
		_ = os.MkdirAll(d, 0o700)
	}
	opts := &ShellOptions{Layout: layout}
	protected := opts.protected(home, "linux")
	path := strings.Join([]string{home + "/.cargo/bin", home + "/.pyenv/shims", home + "/bin", layout.Home + "/bin", "/usr/bin"}, ":")
	readOnly := shellToolchains(nil, path, home, shellGoEnv{}, protected)
	caches, err := shellCaches(nil, layout.Cache, ws)
	if err != nil {
		t.Fatal(err)
	}
	if err := shellWriteGitConfig(layout.Cache, "Ada", "ada@example.com"); err != nil {
		t.Fatal(err)
	}
	gitConfig := filepath.Join(layout.Cache, "shell", "gitconfig")
	plan := shellPlan(sandbox.Landlock, "/bin/bash", append(readOnly, gitConfig), ws, nil, tmp, nil, protected, nil, nil)
	plan.ReadWrite = append(plan.ReadWrite, caches...)
	rules := plan.Rules()

	var inJean2Write, inJean2Read []string
	for _, r := range rules {
		if policy.Within(r.Path, layout.Home) && r.Access&sandbox.Write != 0 {
			inJean2Write = append(inJean2Write, r.Path)
		}
		if policy.Within(r.Path, layout.Home) && r.Access&sandbox.Read != 0 {
			inJean2Read = append(inJean2Read, r.Path)
		}
	}
	slices.Sort(inJean2Write)
	want := append([]string{tmp}, caches...)
	slices.Sort(want)
	if !slices.Equal(inJean2Write, want) {
		t.Fatalf("writable in jean2's home: %v, want %v", inJean2Write, want)
	}
	if len(inJean2Read) != len(want)+1 || !slices.Contains(inJean2Read, gitConfig) {
		t.Fatalf("readable in jean2's home: %v (want the caches, the session folder and %s)", inJean2Read, gitConfig)
	}
	readable := sandbox.Paths(rules, sandbox.Read)
	for _, p := range []string{home + "/.cargo/bin", home + "/.pyenv", home + "/bin"} {
		if !slices.ContainsFunc(readable, func(r string) bool { return policy.Within(p, r) }) {
			t.Errorf("%s is not readable: %v", p, readable)
		}
	}
	for _, p := range []string{home, home + "/.cargo/credentials.toml", home + "/.ssh", home + "/notes.txt"} {
		if slices.ContainsFunc(readable, func(r string) bool { return policy.Within(p, r) }) {
			t.Errorf("%s is readable: %v", p, readable)
		}
	}
}

package sandbox

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// A sealed path is readable and never writable, whether it exists or not: the folder that
// holds it loses its own write grant (a new entry could be the sealed path), its other
// entries keep theirs, and a grant of the sealed path itself or inside it is read only.
func TestPlanSealsPaths(t *testing.T) {
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	for _, p := range []string{"ws/src/a.go", "ws/README.md", "other/.jean2/mcp.json", "home/.jean2/.env"} {
		writeFile(t, filepath.Join(root, p), "x")
	}
	check := func(name string, plan Plan, want map[string]Access) {
		t.Helper()
		got := map[string]Access{}
		for _, r := range plan.Rules() {
			if strings.HasPrefix(r.Path, root) {
				got[strings.TrimPrefix(r.Path, root)] = r.Access
			}
		}
		for p, a := range want {
			if got[p] != a {
				t.Errorf("%s: %s: got %v, want %v (all: %v)", name, p, got[p], a, got)
			}
		}
		for p := range got {
			if _, ok := want[p]; !ok {
				t.Errorf("%s: unexpected rule on %s (%v)", name, p, got[p])
			}
		}
	}
	sealed := []string{filepath.Join(ws, ".jean2")}
	// .jean2 absent: the workspace folder is read (and listed), its entries read-write.
	check("absent", Plan{ReadWrite: []string{ws}, Sealed: sealed}, map[string]Access{
		"/ws": Read, "/ws/src": Read | Write, "/ws/README.md": Read | Write,
	})
	writeFile(t, filepath.Join(ws, ".jean2", "mcp.json"), "{}")
	check("present", Plan{ReadWrite: []string{ws}, Sealed: sealed, DeclaredWrite: []string{filepath.Join(ws, ".jean2", "mcp.json")}},
		map[string]Access{"/ws": Read, "/ws/src": Read | Write, "/ws/README.md": Read | Write, "/ws/.jean2": Read, "/ws/.jean2/mcp.json": Read})
	// A grant above the workspace is carved down to it; protected paths still go.
	check("above", Plan{DeclaredWrite: []string{root}, Sealed: sealed, Protected: []string{filepath.Join(root, "home", ".jean2")}},
		map[string]Access{"": List, "/ws": Read, "/ws/src": Read | Write, "/ws/README.md": Read | Write, "/ws/.jean2": Read,
			"/other": Read | Write, "/home": List})
	// A folder with very many entries: its files stay read-only, its subfolders keep their
	// grant, so the rules fit the launcher's argument.
	big := filepath.Join(root, "big")
	want := map[string]Access{"/big": Read, "/big/d1": Read | Write, "/big/d2": Read | Write}
	writeFile(t, filepath.Join(big, "d1", "x"), "x")
	writeFile(t, filepath.Join(big, "d2", "x"), "x")
	for i := range maxCarvedEntries {
		writeFile(t, filepath.Join(big, fmt.Sprintf("f%03d", i)), "x")
	}
	check("many", Plan{ReadWrite: []string{big}, Sealed: []string{filepath.Join(big, ".jean2")}}, want)
	// Reading is not narrowed.
	check("read", Plan{ReadOnly: []string{ws}, Sealed: sealed}, map[string]Access{"/ws": Read})
}

// A folder the launcher seals by a mount needs no carving of the folder that holds it: the
// workspace keeps its whole grant (new top-level entries included). A grant on or inside
// the sealed folder is read only, and a write grant above the workspace is carved down to
// it, so the workspace cannot be renamed away and replaced.
func TestPlanMountSealedPaths(t *testing.T) {
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	for _, p := range []string{"ws/src/a.go", "ws/.jean2/mcp.json", "other/b.txt"} {
		writeFile(t, filepath.Join(root, p), "x")
	}
	got := func(plan Plan) map[string]Access {
		m := map[string]Access{}
		for _, r := range plan.Rules() {
			if strings.HasPrefix(r.Path, root) {
				m[strings.TrimPrefix(r.Path, root)] = r.Access
			}
		}
		return m
	}
	mounted := []string{filepath.Join(ws, ".jean2")}
	for name, c := range map[string]struct {
		plan Plan
		want map[string]Access
	}{
		"workspace": {Plan{ReadWrite: []string{ws}, MountSealed: mounted}, map[string]Access{"/ws": Read | Write}},
		"inside": {Plan{ReadWrite: []string{ws}, MountSealed: mounted, DeclaredWrite: []string{filepath.Join(ws, ".jean2", "mcp.json")}},
			map[string]Access{"/ws": Read | Write, "/ws/.jean2/mcp.json": Read}},
		"above": {Plan{ReadWrite: []string{ws}, MountSealed: mounted, DeclaredWrite: []string{root}},
			map[string]Access{"": Read, "/ws": Read | Write, "/other": Read | Write}},
		"read above": {Plan{ReadOnly: []string{root}, MountSealed: mounted}, map[string]Access{"": Read}},
	} {
		g := got(c.plan)
		if fmt.Sprint(g) != fmt.Sprint(c.want) {
			t.Errorf("%s: got %v, want %v", name, g, c.want)
		}
	}
}

package toolfs

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/tool"
)

// raceIterations is how many times each operation runs against the swapper.
const raceIterations = 10_000

// Contents that tell the inside file from the outside one.
const (
	insideContent = "inside"
	secretContent = "the outside secret, which no ctx.fs call may see"
	secretOnly    = "only-in-secret"
)

// raceWorld is a workspace whose sub-folder a hostile thread keeps swapping for a symlink to
// a secret folder outside the scope, as a tool's own thread can while the host acts for it.
//
//	base/ws           the workspace
//	base/ws/sub       a real folder, swapped away to base/ws/.aside and back
//	base/secret       outside the scope: what sub's link leads to
type raceWorld struct {
	base, ws, sub, aside, secret string
	f                            *FS
	ledger                       *tool.Ledger
}

func newRaceWorld(t *testing.T) *raceWorld {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	mustDo(t, err)
	r := &raceWorld{
		base:   base,
		ws:     filepath.Join(base, "ws"),
		secret: filepath.Join(base, "secret"),
		ledger: tool.NewLedger(),
	}
	r.sub = filepath.Join(r.ws, "sub")
	r.aside = filepath.Join(r.ws, ".aside")
	mustDo(t, os.MkdirAll(r.sub, 0o755))
	mustDo(t, os.MkdirAll(r.secret, 0o755))
	writeTestFile(t, filepath.Join(r.sub, "f.txt"), insideContent, 0o644)
	writeTestFile(t, filepath.Join(r.secret, "f.txt"), secretContent, 0o644)
	writeTestFile(t, filepath.Join(r.secret, secretOnly), secretContent, 0o644)
	r.f = New(Options{
		Scope:  policy.Scope{Workspace: r.ws, Home: filepath.Join(base, "home"), TempDir: filepath.Join(base, "tmp")},
		Tool:   "attacker",
		CallID: "race",
		Ledger: r.ledger,
	})
	return r
}

// both plants name in the real sub-folder and in the secret one.
func (r *raceWorld) both(t *testing.T, name string, dir bool) {
	t.Helper()
	for root, content := range map[string]string{r.sub: insideContent, r.secret: secretContent} {
		p := filepath.Join(root, name)
		if dir {
			p = filepath.Join(p, "inner")
		}
		writeTestFile(t, p, content, 0o644)
	}
}

// swapping runs the swapper while op runs raceIterations times, then puts the real folder
// back. The swapper renames the real folder away, puts a symlink to the secret folder in its
// place, then takes the link out and moves the folder back, over and over.
func (r *raceWorld) swapping(t *testing.T, op func(i int)) {
	t.Helper()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	swaps := 0
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if os.Rename(r.sub, r.aside) != nil {
				continue
			}
			_ = os.Symlink(r.secret, r.sub)
			_ = os.Remove(r.sub)
			for try := 0; os.Rename(r.aside, r.sub) != nil; try++ {
				// The operation made a new sub-folder while the real one was away (mkdir -p
				// does): move it aside too, inside the workspace.
				if err := os.Rename(r.sub, filepath.Join(r.ws, fmt.Sprintf(".stray%d-%d", swaps, try))); err != nil && try > 100 {
					t.Errorf("swapper: moving a stray folder aside: %v", err)
					return
				}
			}
			swaps++
		}
	})
	for i := range raceIterations {
		op(i)
	}
	close(stop)
	wg.Wait()
	t.Logf("%d swaps during %d operations", swaps, raceIterations)
}

// secretChanges counts the paths below the secret folder that differ from before.
func secretChanges(before, after map[string]string) int {
	n := 0
	for k, v := range before {
		if after[k] != v {
			n++
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			n++
		}
	}
	return n
}

// TestSwappedFolderRace runs every ctx.fs operation (and Restore) against a thread swapping a
// workspace folder for a symlink to a folder outside the scope. Nothing outside may be read,
// written, created, moved or removed.
func TestSwappedFolderRace(t *testing.T) {
	if testing.Short() {
		t.Skip("races each operation 10,000 times")
	}
	cases := []struct {
		name  string
		setup func(t *testing.T, r *raceWorld)
		// op runs iteration i and reports whether it saw something from outside.
		op func(r *raceWorld, i int) bool
	}{
		{name: "readFile", op: func(r *raceWorld, _ int) bool {
			data, _ := r.f.ReadFile(ctx, "sub/f.txt")
			return string(data) == secretContent
		}},
		{name: "readDir", op: func(r *raceWorld, _ int) bool {
			entries, _ := r.f.ReadDir(ctx, "sub")
			return slices.ContainsFunc(entries, func(e tool.DirEntry) bool { return e.Name == secretOnly })
		}},
		{name: "stat", op: func(r *raceWorld, _ int) bool {
			fi, err := r.f.Stat(ctx, "sub/"+secretOnly)
			return err == nil || fi.Size == int64(len(secretContent))
		}},
		{name: "exists", op: func(r *raceWorld, _ int) bool {
			ok, _ := r.f.Exists(ctx, "sub/"+secretOnly)
			return ok
		}},
		{name: "writeFile", op: func(r *raceWorld, i int) bool {
			if i%2 == 0 {
				_ = r.f.WriteFile(ctx, fmt.Sprintf("sub/w%d.txt", i), []byte("w"))
			} else {
				_ = r.f.WriteFile(ctx, fmt.Sprintf("sub/wd%d/deeper/x.txt", i), []byte("w"))
			}
			if i%97 == 0 {
				_ = r.f.WriteFile(ctx, "sub/f.txt", []byte("overwritten"))
			}
			return false
		}},
		{name: "appendFile", op: func(r *raceWorld, _ int) bool {
			_ = r.f.AppendFile(ctx, "sub/f.txt", []byte("+"))
			return false
		}},
		{name: "mkdir", op: func(r *raceWorld, i int) bool {
			_ = r.f.Mkdir(ctx, fmt.Sprintf("sub/m%d", i), false)
			return false
		}},
		{name: "mkdir-recursive", op: func(r *raceWorld, i int) bool {
			_ = r.f.Mkdir(ctx, fmt.Sprintf("sub/r%d/a/b", i), true)
			return false
		}},
		{name: "rm", setup: func(t *testing.T, r *raceWorld) {
			for i := range raceIterations {
				r.both(t, fmt.Sprintf("rm%d", i), false)
			}
		}, op: func(r *raceWorld, i int) bool {
			_ = r.f.Remove(ctx, fmt.Sprintf("sub/rm%d", i), false)
			return false
		}},
		{name: "rm-recursive", setup: func(t *testing.T, r *raceWorld) {
			for i := range raceIterations {
				r.both(t, fmt.Sprintf("rr%d", i), true)
			}
		}, op: func(r *raceWorld, i int) bool {
			_ = r.f.Remove(ctx, fmt.Sprintf("sub/rr%d", i), true)
			return false
		}},
		{name: "rename", setup: func(t *testing.T, r *raceWorld) {
			for i := range raceIterations {
				if i%2 == 0 {
					r.both(t, fmt.Sprintf("mv%d", i), i%4 == 0)
				} else {
					writeTestFile(t, filepath.Join(r.ws, fmt.Sprintf("in%d", i)), "in", 0o644)
				}
			}
		}, op: func(r *raceWorld, i int) bool {
			if i%2 == 0 {
				// Out of the swapped folder: must never bring an outside file in.
				_ = r.f.Rename(ctx, fmt.Sprintf("sub/mv%d", i), fmt.Sprintf("out%d", i))
			} else {
				// Into it: must never put a file outside.
				_ = r.f.Rename(ctx, fmt.Sprintf("in%d", i), fmt.Sprintf("sub/in%d", i))
			}
			return false
		}},
		{name: "restore", setup: func(t *testing.T, r *raceWorld) {
			for i := range raceIterations {
				writeTestFile(t, filepath.Join(r.secret, fmt.Sprintf("new%d", i)), "x", 0o644)
			}
		}, op: func(r *raceWorld, i int) bool {
			// What undo puts back: a file that did not exist is removed, a file's old
			// content is written, a folder that was there is made again.
			changes := []tool.Change{
				{Path: filepath.Join(r.sub, fmt.Sprintf("new%d", i)), Op: OpWrite, Disk: true, OK: true, Before: &tool.FileState{}},
				{Path: filepath.Join(r.sub, "f.txt"), Op: OpWrite, Disk: true, OK: true, Before: &tool.FileState{Exists: true, Mode: 0o644, Content: []byte("restored")}},
				{Path: filepath.Join(r.sub, fmt.Sprintf("rd%d", i)), Op: OpRemove, Disk: true, OK: true, Before: &tool.FileState{Exists: true, IsDir: true, Mode: 0o755 | os.ModeDir,
					Entries: []tool.DirState{{Name: "g.txt", State: tool.FileState{Exists: true, Mode: 0o644, Content: []byte("g")}}}}},
			}
			_, _ = Restore(changes)
			return false
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRaceWorld(t)
			if c.setup != nil {
				c.setup(t, r)
			}
			before := snapshotTree(t, r.secret)
			seen := 0
			r.swapping(t, func(i int) {
				if c.op(r, i) {
					seen++
				}
			})
			changed := secretChanges(before, snapshotTree(t, r.secret))
			if seen+changed > 0 {
				t.Errorf("%s escaped the workspace: %d results read from outside, %d outside paths created, changed, moved or removed", c.name, seen, changed)
			}
			// Anything moved in from outside carries the secret's content.
			movedIn := 0
			for i := range raceIterations {
				out := filepath.Join(r.ws, fmt.Sprintf("out%d", i))
				b, err := os.ReadFile(out)
				if err != nil {
					b, err = os.ReadFile(filepath.Join(out, "inner"))
				}
				if err == nil && string(b) == secretContent {
					movedIn++
				}
			}
			if movedIn > 0 {
				t.Errorf("%d outside files or folders were moved into the workspace", movedIn)
			}
		})
	}
}

// TestSwappedFolderRaceGranted is the race for a folder outside the scope that a permission
// granted: the grant's folder is the root the operations are resolved beneath.
func TestSwappedFolderRaceGranted(t *testing.T) {
	if testing.Short() {
		t.Skip("races each operation 10,000 times")
	}
	ops := map[string]func(r *raceWorld, i int) bool{
		"readFile": func(r *raceWorld, _ int) bool {
			data, _ := r.f.ReadFile(ctx, filepath.Join(r.sub, "f.txt"))
			return string(data) == secretContent
		},
		"writeFile": func(r *raceWorld, i int) bool {
			_ = r.f.WriteFile(ctx, filepath.Join(r.sub, fmt.Sprintf("wd%d/x.txt", i)), []byte("w"))
			return false
		},
		"rm-recursive": func(r *raceWorld, i int) bool {
			_ = r.f.Remove(ctx, filepath.Join(r.sub, fmt.Sprintf("rr%d", i)), true)
			return false
		},
	}
	for _, name := range []string{"readFile", "writeFile", "rm-recursive"} {
		t.Run(name, func(t *testing.T) {
			r := newRaceWorld(t)
			// The workspace is elsewhere; r.ws is reached through a grant for the folder.
			r.f = New(Options{
				Scope:  policy.Scope{Workspace: filepath.Join(r.base, "elsewhere"), Home: filepath.Join(r.base, "home")},
				Grants: GrantsFunc(func(p string, _ bool) bool { return policy.Within(p, r.ws) }),
				Ledger: r.ledger,
			})
			if name == "rm-recursive" {
				for i := range raceIterations {
					r.both(t, fmt.Sprintf("rr%d", i), true)
				}
			}
			before := snapshotTree(t, r.secret)
			seen := 0
			r.swapping(t, func(i int) {
				if ops[name](r, i) {
					seen++
				}
			})
			if changed := secretChanges(before, snapshotTree(t, r.secret)); seen+changed > 0 {
				t.Errorf("%s escaped the granted folder: %d results read from outside, %d outside paths changed", name, seen, changed)
			}
		})
	}
}

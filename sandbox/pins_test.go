package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jean2/jean2/internal/rawio"
)

// The race the pins close: a folder checked (pinned) as real, then swapped for a link
// before the plan resolves it. The plan's rules would grant the link's target; WritesWithin
// refuses them, and the next check (Pins.Real) says what happened. A folder made again at
// the same place is the same workspace. Both ways of checking: through os.Stat and the
// host's (raw where safe).
func TestPinsAttackFolderSwappedBetweenCheckAndPlan(t *testing.T) {
	st := rawio.NewStater()
	defer st.Close()
	for name, st := range map[string]*rawio.Stater{"os.Stat": nil, "Stater": st} {
		t.Run(name, func(t *testing.T) { pinsSwapAttack(t, st) })
	}
}

func pinsSwapAttack(t *testing.T, st *rawio.Stater) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	ws := filepath.Join(root, "code", "app")
	elsewhere := filepath.Join(root, "user-files")
	for _, d := range []string{ws, elsewhere} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pins := Pins{Stater: st}
	real, err := pins.Real(ws)
	if err != nil || real != ws {
		t.Fatalf("first use: %q %v", real, err)
	}
	if again, err := pins.Real(ws); err != nil || again != ws {
		t.Fatalf("again: %q %v", again, err)
	}
	// The swap, after the check.
	if err := os.Rename(ws, ws+"-aside"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, ws); err != nil {
		t.Fatal(err)
	}
	rules := Plan{ReadWrite: []string{ws}}.Rules()
	if err := WritesWithin(rules, []string{real}); err == nil || !strings.Contains(err.Error(), elsewhere) {
		t.Errorf("a plan made after the swap: %v", err)
	}
	if _, err := pins.Real(ws); err == nil || !strings.Contains(err.Error(), "now leads to "+elsewhere) {
		t.Errorf("the next check: %v", err)
	}
	// Put back as a new folder at the same place: accepted.
	if err := os.Remove(ws); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := pins.Real(ws); err != nil || got != ws {
		t.Errorf("a folder made again: %q %v", got, err)
	}
	if err := WritesWithin(Plan{ReadWrite: []string{ws}}.Rules(), []string{ws}); err != nil {
		t.Errorf("an ordinary plan: %v", err)
	}
}

package undo

import (
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/jean2/jean2/toolfs"
)

// TestPruneLeftoversAndDamage: what a crash left in tmp/ and a file in the blob store that
// is not a blob's are removed; a kept manifest that cannot be read keeps none of its blobs
// (and says so in the log rather than failing the prune), nor does the manifest it replaced;
// a closed store refuses to prune. The two versions and the stray file: 9+9+1 bytes.
func TestPruneLeftoversAndDamage(t *testing.T) {
	e := newEnv(t, Options{PruneEvery: -1})
	e.write("a.txt", "version 0", 0o644)
	e.turn(func(*toolfs.FS) { e.sh(`printf 'version 1' > a.txt`) })
	has := func(s string) bool { return e.s.blobs.has(sha256.Sum256([]byte(s))) }
	if !has("version 1") {
		t.Fatal("the turn stored no copy of version 1")
	}
	leftover := filepath.Join(e.s.blobs.tmp, "write-123")
	stray := filepath.Join(e.s.blobs.dir, "zz", "not-a-blob")
	for _, p := range []string{leftover, stray} {
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte("x"), 0o644))
	}
	keep, err := e.s.liveManifests()
	must(t, err)
	for id := range keep {
		must(t, os.WriteFile(filepath.Join(e.s.dir, "manifests", id), []byte("damaged"), 0o644))
	}

	rep, err := e.s.Prune(e.ctx)
	must(t, err)
	if rep != (PruneReport{Blobs: 3, Bytes: 19, Manifests: 1, Temp: 1}) || has("version 1") || has("version 0") {
		t.Fatalf("prune report %+v, version 1 kept %v", rep, has("version 1"))
	}
	for _, p := range []string{leftover, stray} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s survived the prune: %v", p, err)
		}
	}
	must(t, e.s.Close())
	if _, err := e.s.Prune(e.ctx); !errors.Is(err, errClosed) {
		t.Fatalf("prune of a closed store: %v", err)
	}
}

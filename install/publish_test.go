package install

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// copyCatalogue copies the repository's catalogue, then gives every file and folder of the
// copy the time mtime and (when loose) looser modes, as a checkout on another machine would.
func copyCatalogue(t *testing.T, mtime time.Time, loose bool) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "catalogue")
	if out, err := exec.Command("cp", "-r", "../catalogue", dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	err := filepath.Walk(dst, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if loose && !info.IsDir() {
			if err := os.Chmod(p, 0o664); err != nil {
				return err
			}
		}
		return os.Chtimes(p, mtime, mtime)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// Two builds of the catalogue from copies with other times and modes, and with litter an
// author's folder holds (.jean2/types, node_modules), give the same bytes, file for file.
func TestBuildIndexIsReproducible(t *testing.T) {
	a := copyCatalogue(t, time.Date(2021, 3, 4, 5, 6, 7, 0, time.UTC), false)
	b := copyCatalogue(t, time.Now(), true)
	for _, litter := range []string{".jean2/types/x.d.ts", "node_modules/left-pad/index.js", ".DS_Store"} {
		p := filepath.Join(b, "json-format", filepath.FromSlash(litter))
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("machine-local"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	outA, outB := t.TempDir(), t.TempDir()
	idx, err := BuildIndex(BuildOptions{Catalogue: a, Out: outA})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := BuildIndex(BuildOptions{Catalogue: b, Out: outB}); err != nil {
		t.Fatal(err)
	}
	filesA, filesB := readAll(t, outA), readAll(t, outB)
	if len(filesA) != 2*len(idx.Tools)+1 || len(idx.Tools) < 4 {
		t.Fatalf("output holds %d files for %d tools", len(filesA), len(idx.Tools))
	}
	for name, data := range filesA {
		if !bytes.Equal(data, filesB[name]) {
			t.Errorf("%s differs between the two builds", name)
		}
	}
	checkIndexAgainstFiles(t, outA, filesA)
	checkArchiveHeaders(t, filesA["json-format-1.0.0.tar.gz"])
}

func readAll(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = data
	}
	return out
}

// The index parses as the installer reads it, each entry's archive is where its template
// says, and the index's digest and the .sha256 beside the archive are the archive's.
func checkIndexAgainstFiles(t *testing.T, out string, files map[string][]byte) {
	t.Helper()
	idx, err := ParseIndex(files[IndexFileName], filepath.Join(out, IndexFileName))
	if err != nil || len(idx.Problems) > 0 {
		t.Fatalf("index: %v %v", err, idx.Problems)
	}
	for _, tool := range idx.Tools {
		loc, err := idx.ArchiveLocation(tool)
		if err != nil {
			t.Fatal(err)
		}
		archive := files[filepath.Base(loc)]
		if filepath.Dir(loc) != out || archive == nil {
			t.Fatalf("%s: archive at %s, not in the output", tool.Name, loc)
		}
		side, err := parseSumFile(files[filepath.Base(loc)+".sha256"])
		if err != nil || side != tool.SHA256 || side != sum(archive) || tool.Description == "" || tool.Version == "" {
			t.Fatalf("%s: index %+v, .sha256 %q (%v), archive %s", tool.Name, tool, side, err, sum(archive))
		}
	}
}

// The archive's entries are sorted, owned by 0:0 with no names, all at the fixed time, with
// the fixed modes and none of an author's dot files; the gzip header holds no name or time.
func checkArchiveHeaders(t *testing.T, archive []byte) {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	if zr.Name != "" || !zr.ModTime.IsZero() || zr.Comment != "" {
		t.Fatalf("gzip header: name %q, time %v", zr.Name, zr.ModTime)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		wantMode := int64(0o644)
		if h.Typeflag == tar.TypeDir {
			wantMode = 0o755
		}
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || !h.ModTime.Equal(ReproducibleModTime) || h.Mode != wantMode {
			t.Errorf("%s: uid %d gid %d %q %q time %v mode %o", h.Name, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime, h.Mode)
		}
		if strings.HasPrefix(h.Name, ".") || strings.Contains(h.Name, "/.") || strings.Contains(h.Name, "node_modules") {
			t.Errorf("%s was packed", h.Name)
		}
	}
	if !sort.StringsAreSorted(names) || !contains(names, "tool.ts") || !contains(names, "VERSION") || !contains(names, "tests/format.json") {
		t.Fatalf("entries %q", names)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// A folder the manifest does not list, and a listed tool with no folder, stop the build.
func TestBuildIndexCatalogueMustAgreeWithManifest(t *testing.T) {
	cat := copyCatalogue(t, time.Now(), false)
	if err := os.Mkdir(filepath.Join(cat, "stray"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := BuildIndex(BuildOptions{Catalogue: cat, Out: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "the folder stray is not listed") {
		t.Fatalf("unlisted folder: %v", err)
	}
	os.Remove(filepath.Join(cat, "stray"))
	if err := os.RemoveAll(filepath.Join(cat, "url-codec")); err != nil {
		t.Fatal(err)
	}
	_, err = BuildIndex(BuildOptions{Catalogue: cat, Out: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), `lists "url-codec", which has no folder`) {
		t.Fatalf("missing folder: %v", err)
	}
}

// With a base URL, the archives are named under it (a release's own download folder).
func TestBuildIndexBaseURL(t *testing.T) {
	out := t.TempDir()
	base := "https://github.com/jean2/jean2/releases/download/v1.2.3"
	if _, err := BuildIndex(BuildOptions{Catalogue: "../catalogue", Out: out, BaseURL: base}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(out, IndexFileName))
	idx, err := ParseIndex(data, DefaultIndexURL)
	if err != nil {
		t.Fatal(err)
	}
	tool, _ := idx.Tool("hash-file")
	if loc, err := idx.ArchiveLocation(tool); err != nil || loc != base+"/hash-file-1.0.0.tar.gz" {
		t.Fatalf("archive location %q %v", loc, err)
	}
}

package install

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/jean2/jean2/internal/fsutil"
)

// DefaultIndexURL is the tool index used when the person configures none: the index that
// every release of jean2 publishes beside its binaries (BuildIndex over the repository's
// catalogue/ folder). "latest" follows GitHub's newest release; the archives it names are
// pinned to that release's own tag (BuildOptions.BaseURL), so an index read just before a
// new release still names archives that exist and match its checksums.
const DefaultIndexURL = "https://github.com/jean2/jean2/releases/latest/download/" + IndexFileName

// IndexFileName is the name BuildIndex gives the index in its output folder.
const IndexFileName = "tools.json"

// CatalogueManifest is the file of a catalogue folder that lists its tools, in the order
// the index gives them, with what the tools' own folders do not say.
const CatalogueManifest = "manifest.json"

// ReproducibleModTime is the time every archive entry carries when BuildOptions gives none
// (1980-01-01, the earliest time a zip can hold, so a repack to zip keeps it).
var ReproducibleModTime = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

// BuildOptions describe one index build.
type BuildOptions struct {
	// Catalogue is the folder holding manifest.json and one folder per tool.
	Catalogue string
	// Out is the folder the archives, their .sha256 files and tools.json are written to.
	Out string
	// BaseURL is where the archives will be published (e.g. a release's download URL);
	// "" writes an index whose archives are found beside it, wherever it is served from.
	BaseURL string
	// ModTime is every entry's time; zero means ReproducibleModTime.
	ModTime time.Time
}

// catalogueEntry is one line of manifest.json.
type catalogueEntry struct {
	Name        string `json:"name"`
	Category    string `json:"category,omitempty"`
	Recommended bool   `json:"recommended,omitempty"`
}

// BuildIndex packs each tool of a catalogue into a reproducible archive — the same source
// gives the same bytes, whatever the files' times, owners or the order the file system
// lists them in — writes NAME-VERSION.tar.gz and NAME-VERSION.tar.gz.sha256 for each, and
// the version 3 index that names them with their versions and checksums.
func BuildIndex(opts BuildOptions) (*Index, error) {
	if opts.ModTime.IsZero() {
		opts.ModTime = ReproducibleModTime
	}
	entries, err := readCatalogueManifest(opts.Catalogue)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return nil, fmt.Errorf("build index: %w", err)
	}
	idx := &Index{Version: IndexFormat, Registry: IndexRegistry{BaseURL: opts.BaseURL, URLTemplate: "{name}-{version}.tar.gz"}}
	if opts.BaseURL != "" {
		idx.Registry.URLTemplate = "{baseUrl}/{name}-{version}.tar.gz"
	}
	for _, e := range entries {
		t, err := publishTool(opts, e)
		if err != nil {
			return nil, err
		}
		idx.Tools = append(idx.Tools, t)
	}
	data, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return nil, err
	}
	idx.Location = filepath.Join(opts.Out, IndexFileName)
	if err := os.WriteFile(idx.Location, append(data, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("build index: %w", err)
	}
	return idx, nil
}

// readCatalogueManifest reads manifest.json and checks that it and the folders agree, so a
// tool is neither forgotten nor listed without its folder.
func readCatalogueManifest(dir string) ([]catalogueEntry, error) {
	file := filepath.Join(dir, CatalogueManifest)
	data, err := fsutil.ReadLimited(file, maxIndexBytes)
	if err != nil {
		return nil, fmt.Errorf("catalogue: %w", err)
	}
	var m struct {
		Tools []catalogueEntry `json:"tools"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("catalogue %s: %w", file, err)
	}
	listed := map[string]bool{}
	for _, e := range m.Tools {
		if err := CheckName(e.Name); err != nil {
			return nil, fmt.Errorf("catalogue %s: %w", file, err)
		}
		if listed[e.Name] {
			return nil, fmt.Errorf("catalogue %s: %q is listed twice", file, e.Name)
		}
		listed[e.Name] = true
		if st, err := os.Stat(filepath.Join(dir, e.Name)); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("catalogue %s lists %q, which has no folder in %s", file, e.Name, dir)
		}
	}
	dirs, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("catalogue: %w", err)
	}
	for _, d := range dirs {
		if d.IsDir() && !listed[d.Name()] && !strings.HasPrefix(d.Name(), ".") {
			return nil, fmt.Errorf("catalogue: the folder %s is not listed in %s", d.Name(), file)
		}
	}
	return m.Tools, nil
}

// publishTool packs one tool and writes its archive and checksum file.
func publishTool(opts BuildOptions, e catalogueEntry) (IndexTool, error) {
	dir := filepath.Join(opts.Catalogue, e.Name)
	version, description, err := toolMetadata(dir)
	if err != nil {
		return IndexTool{}, fmt.Errorf("catalogue tool %s: %w", e.Name, err)
	}
	archive, err := packReproducible(dir, opts.ModTime)
	if err != nil {
		return IndexTool{}, fmt.Errorf("catalogue tool %s: %w", e.Name, err)
	}
	sum := sha256.Sum256(archive)
	digest := hex.EncodeToString(sum[:])
	name := e.Name + "-" + version + ".tar.gz"
	// The .sha256 beside the archive, as sha256sum writes it, serves an install from the
	// archive's URL alone; an install by name checks the index's copy of the same digest.
	for file, data := range map[string][]byte{name: archive, name + ".sha256": []byte(digest + "  " + name + "\n")} {
		if err := os.WriteFile(filepath.Join(opts.Out, file), data, 0o644); err != nil {
			return IndexTool{}, fmt.Errorf("catalogue tool %s: %w", e.Name, err)
		}
	}
	return IndexTool{Name: e.Name, Description: description, Version: version, Category: e.Category,
		Recommended: e.Recommended, SHA256: digest}, nil
}

// toolMetadata reads a tool folder's version (VERSION, else package.json "version") and
// its package.json "description", which the index shows in search.
func toolMetadata(dir string) (version, description string, err error) {
	var pkg struct {
		Version     string `json:"version"`
		Description string `json:"description"`
	}
	data, err := fsutil.ReadLimited(filepath.Join(dir, "package.json"), 1<<20)
	if err != nil {
		return "", "", err
	}
	if err := json.Unmarshal(data, &pkg); err != nil {
		return "", "", fmt.Errorf("package.json: %w", err)
	}
	version = pkg.Version
	if v, err := os.ReadFile(filepath.Join(dir, "VERSION")); err == nil {
		version = strings.TrimSpace(string(v))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", "", err
	}
	if _, err := ParseVersion(version); err != nil {
		return "", "", fmt.Errorf("version: %w", err)
	}
	if strings.TrimSpace(pkg.Description) == "" {
		return "", "", errors.New(`package.json has no "description", which the index needs`)
	}
	return version, pkg.Description, nil
}

// packReproducible makes a .tar.gz of a tool folder whose bytes depend on the files' paths,
// contents and executable bits only: entries sorted by path, one fixed time, owner 0:0 with
// no names, modes 0755/0644, and a gzip header with no name and no time. Dot files and
// folders (.jean2/types, .gitignore) and node_modules are left out: they are the author's
// machine's, not the tool's. A symbolic link is refused rather than followed.
func packReproducible(dir string, mtime time.Time) ([]byte, error) {
	paths, err := archivePaths(dir)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	for _, p := range paths {
		if err := writeArchiveEntry(tw, dir, p, mtime); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// archivePaths lists what goes into a tool's archive, slash-separated and sorted.
func archivePaths(dir string) ([]string, error) {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		if name := d.Name(); strings.HasPrefix(name, ".") || name == "node_modules" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file or folder (a link is not packed)", rel)
		}
		paths = append(paths, filepath.ToSlash(rel))
		return nil
	})
	sort.Strings(paths)
	return paths, err
}

func writeArchiveEntry(tw *tar.Writer, dir, rel string, mtime time.Time) error {
	full := filepath.Join(dir, filepath.FromSlash(rel))
	st, err := os.Stat(full)
	if err != nil {
		return err
	}
	hdr := &tar.Header{Name: rel, ModTime: mtime, Mode: 0o644, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if st.IsDir() {
		hdr.Name, hdr.Mode, hdr.Typeflag = rel+"/", 0o755, tar.TypeDir
	} else if st.Mode()&0o111 != 0 {
		hdr.Mode = 0o755
	}
	var data []byte
	if !st.IsDir() {
		if data, err = os.ReadFile(full); err != nil {
			return err
		}
		hdr.Size = int64(len(data))
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	_, err = tw.Write(data)
	return err
}

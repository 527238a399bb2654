package loader

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/jean2/jean2/internal/fsutil"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
)

// formatVersion changes whenever the loader's bundle output changes for the same input
// (options, banner, plugin), so old cache entries are not reused.
const formatVersion = "jean2-loader/3"

// hashInputs are what a bundle depends on besides the folder's files.
type hashInputs struct {
	dir       string // absolute folder path: source maps point into it
	entry     string
	depsStamp string
	sdk       string
	esbuild   string
}

// hashFolder hashes every file of the folder except node_modules and .git (names, modes and
// contents, streamed) together with the inputs. Symlinked files are hashed by content, so a
// change behind the link counts; symlinked directories by their target.
func hashFolder(in hashInputs) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\nesbuild=%s\nsdk=%s\ndir=%q\nentry=%q\ndeps=%s\n", formatVersion, in.esbuild, in.sdk, in.dir, in.entry, in.depsStamp)
	buf := make([]byte, 32<<10)
	err := filepath.WalkDir(in.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, relErr := filepath.Rel(in.dir, p)
		if relErr != nil {
			return relErr
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if p != in.dir && (d.Name() == "node_modules" || d.Name() == ".git") {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case d.Type().IsRegular():
			return hashFile(h, "f", rel, p, buf)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			st, err := os.Stat(p)
			if err != nil || !st.Mode().IsRegular() {
				// A dangling link or a linked directory: its target is what there is to know.
				fmt.Fprintf(h, "l %q -> %q\n", rel, target)
				return nil
			}
			return hashFile(h, "L "+fmt.Sprintf("%q", target), rel, p, buf)
		}
		return nil // sockets, devices, pipes: not part of a tool
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func hashFile(h hash.Hash, kind, rel, p string, buf []byte) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	fmt.Fprintf(h, "%s %q %o %d\n", kind, rel, st.Mode().Perm(), st.Size())
	_, err = io.CopyBuffer(h, io.LimitReader(f, st.Size()), buf)
	return err
}

// esbuildPinned is the esbuild version go.mod requires. Binaries read the linked version
// from their build info; test binaries carry no dependency list, so they use this, and a
// test keeps it equal to go.mod.
const esbuildPinned = "v0.28.2"

// esbuildVersion is the version of the esbuild module linked into the binary.
func esbuildVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "github.com/evanw/esbuild" {
				if dep.Replace != nil {
					return dep.Replace.Path + "@" + dep.Replace.Version
				}
				return dep.Version
			}
		}
	}
	return esbuildPinned
}

var hashPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

func checkHash(hash string) error {
	if !hashPattern.MatchString(hash) {
		return fmt.Errorf("cache key %q is not a bundle hash (64 lower-case hex digits)", hash)
	}
	return nil
}

func (l *Loader) bundleDir() string { return filepath.Join(l.opts.CacheDir, "bundles") }

// BundlePath is where the bundle of a hash lives.
func (l *Loader) BundlePath(hash string) string {
	return filepath.Join(l.bundleDir(), hash+".mjs")
}

func (l *Loader) metaPath(hash string) string {
	return filepath.Join(l.bundleDir(), hash+".json")
}

// publishBundle puts a bundle in the cache without ever replacing one that is there. A
// confined worker's Landlock rule names the bundle's inode: had another process renamed its
// own copy over the path between the rule and the import, the worker would be refused its
// own code (EACCES). The content is written to a temporary file and hard-linked into place;
// when a bundle of the same hash (the same content) got there first, it stays.
func publishBundle(path string, code []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, werr := f.Write(code)
	if err := errors.Join(werr, f.Chmod(0o644), f.Close()); err != nil {
		return err
	}
	if err := os.Link(tmp, path); err != nil && !errors.Is(err, fs.ErrExist) {
		// A file system without hard links: a rename is atomic still.
		if rerr := os.Rename(tmp, path); rerr != nil {
			return errors.Join(err, rerr)
		}
	}
	return nil
}

// StoreMeta keeps an opaque JSON value (the host stores a tool's definition) beside the
// bundle of hash, so a later start can list the tool without a worker.
func (l *Loader) StoreMeta(hash string, raw json.RawMessage) error {
	if err := checkHash(hash); err != nil {
		return fmt.Errorf("store meta: %w", err)
	}
	if !json.Valid(raw) {
		return fmt.Errorf("store meta %s: value is not valid JSON", hash)
	}
	if err := os.MkdirAll(l.bundleDir(), 0o755); err != nil {
		return fmt.Errorf("store meta %s: %w", hash, err)
	}
	if err := fsutil.WriteFileAtomic(l.metaPath(hash), raw); err != nil {
		return fmt.Errorf("store meta %s: %w", hash, err)
	}
	return nil
}

// Meta returns what StoreMeta kept for hash.
func (l *Loader) Meta(hash string) (json.RawMessage, bool) {
	if checkHash(hash) != nil {
		return nil, false
	}
	raw, err := os.ReadFile(l.metaPath(hash))
	if err != nil || !json.Valid(raw) {
		return nil, false
	}
	return raw, true
}

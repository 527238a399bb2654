package install

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Archive formats, found by content rather than by name (a URL need not end in .tar.gz).
const (
	formatTarGz = "tar.gz"
	formatTar   = "tar"
	formatZip   = "zip"
)

func sniffFormat(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	head := make([]byte, 512)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", err
	}
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return formatTarGz, nil
	case bytes.HasPrefix(head, []byte("PK\x03\x04")), bytes.HasPrefix(head, []byte("PK\x05\x06")):
		return formatZip, nil
	case n >= 262 && string(head[257:262]) == "ustar":
		return formatTar, nil
	}
	return "", errors.New("not a .tar.gz, .tgz, .tar or .zip archive (its first bytes match none of them)")
}

// unpackArchive unpacks an untrusted archive into dst, which must not exist yet, and
// returns the folder the tool is in: dst, or the archive's single top folder.
func unpackArchive(file, dst string, lim Limits) (string, error) {
	format, err := sniffFormat(file)
	if err != nil {
		return "", err
	}
	if err := os.Mkdir(dst, 0o755); err != nil {
		return "", err
	}
	root, err := os.OpenRoot(dst)
	if err != nil {
		return "", err
	}
	defer root.Close()
	x := &extractor{root: root, lim: lim, kinds: map[string]byte{}}
	switch format {
	case formatZip:
		err = x.zip(file)
	default:
		err = x.tar(file, format == formatTarGz)
	}
	if err != nil {
		return "", err
	}
	if err := checkLinks(dst); err != nil {
		return "", err
	}
	return topFolder(dst)
}

// topFolder returns dst's single sub-folder when that is all dst holds.
func topFolder(dst string) (string, error) {
	entries, err := os.ReadDir(dst)
	if err != nil {
		return "", err
	}
	if len(entries) == 1 && entries[0].IsDir() {
		return filepath.Join(dst, entries[0].Name()), nil
	}
	return dst, nil
}

// extractor writes entries below root, counting files and bytes against the limits.
type extractor struct {
	root  *os.Root
	lim   Limits
	files int
	bytes int64
	kinds map[string]byte // entry name → 'f' file, 'd' folder, 'l' link
}

// LimitError is an archive or folder over a size or count limit.
type LimitError struct{ Msg string }

func (e *LimitError) Error() string { return e.Msg }

func (x *extractor) countFile(name string) error {
	x.files++
	if x.files > x.lim.MaxFiles {
		return &LimitError{fmt.Sprintf("more than %d files and folders (at %s); a tool this large is refused", x.lim.MaxFiles, name)}
	}
	return nil
}

func (x *extractor) countBytes(name string, n int64) error {
	x.bytes += n
	if x.bytes > x.lim.MaxUnpacked {
		return &LimitError{fmt.Sprintf("more than %d bytes unpacked (at %s); a tool this large is refused", x.lim.MaxUnpacked, name)}
	}
	return nil
}

// cleanEntryName checks an entry's name and returns it clean and slash-separated; "" means
// the entry is the archive's root and is skipped.
func cleanEntryName(name string) (string, error) {
	if strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("entry %q has a NUL byte in its name", name)
	}
	if strings.HasPrefix(name, "/") || strings.HasPrefix(name, "\\") || (len(name) >= 2 && name[1] == ':') {
		return "", fmt.Errorf("entry %q has an absolute path; archive entries must be relative", name)
	}
	for _, part := range strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r == '\\' }) {
		if part == ".." {
			return "", fmt.Errorf("entry %q climbs out of the archive with \"..\"", name)
		}
	}
	clean := path.Clean(name)
	if clean == "." {
		return "", nil
	}
	return clean, nil
}

// checkLinkTarget refuses a link whose target is absolute or climbs out of the root,
// judged from where the link sits.
func checkLinkTarget(name, target string) error {
	if target == "" {
		return fmt.Errorf("link %s has an empty target", name)
	}
	if strings.HasPrefix(target, "/") || strings.HasPrefix(target, "\\") || (len(target) >= 2 && target[1] == ':') {
		return fmt.Errorf("link %s points to the absolute path %s; links must stay inside the tool", name, target)
	}
	joined := path.Clean(path.Join(path.Dir(name), strings.ReplaceAll(target, "\\", "/")))
	if joined == ".." || strings.HasPrefix(joined, "../") {
		return fmt.Errorf("link %s points outside the tool (to %s)", name, target)
	}
	return nil
}

// skipped reports entries that are not part of any tool: macOS resource forks.
func skipped(name string) bool {
	return name == "__MACOSX" || strings.HasPrefix(name, "__MACOSX/")
}

func (x *extractor) dir(name string) error {
	if k, ok := x.kinds[name]; ok && k != 'd' {
		return fmt.Errorf("entry %s is both a file and a folder", name)
	}
	if _, ok := x.kinds[name]; !ok {
		if err := x.countFile(name); err != nil {
			return err
		}
		x.kinds[name] = 'd'
	}
	return x.root.MkdirAll(name, 0o755)
}

func (x *extractor) claim(name string, kind byte) error {
	if _, dup := x.kinds[name]; dup {
		return fmt.Errorf("entry %s appears twice in the archive", name)
	}
	if err := x.countFile(name); err != nil {
		return err
	}
	x.kinds[name] = kind
	if dir := path.Dir(name); dir != "." {
		if err := x.root.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create folder for %s: %w", name, err)
		}
	}
	return nil
}

func (x *extractor) file(name string, mode fs.FileMode, size int64, r io.Reader) error {
	if err := x.claim(name, 'f'); err != nil {
		return err
	}
	if size > x.lim.MaxUnpacked-x.bytes {
		return &LimitError{fmt.Sprintf("entry %s is %d bytes, which would pass the limit of %d bytes unpacked", name, size, x.lim.MaxUnpacked)}
	}
	// Keep the owner's read and write and everyone's execute bits; never setuid, setgid or
	// sticky, never writable by others.
	perm := mode.Perm()&0o755 | 0o600
	f, err := x.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	remaining := x.lim.MaxUnpacked - x.bytes
	n, err := io.Copy(f, io.LimitReader(readTagger{r}, remaining+1))
	cerr := f.Close()
	var re readError
	if errors.As(err, &re) {
		return fmt.Errorf("read %s: the archive is corrupt or ends early: %w", name, re.err)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if cerr != nil {
		return fmt.Errorf("write %s: %w", name, cerr)
	}
	return x.countBytes(name, n)
}

func (x *extractor) symlink(name, target string) error {
	if err := checkLinkTarget(name, target); err != nil {
		return err
	}
	if err := x.claim(name, 'l'); err != nil {
		return err
	}
	return x.root.Symlink(target, name)
}

// hardlink copies an earlier regular file of the archive: a copy cannot reach any file
// outside the tool, whatever the link said.
func (x *extractor) hardlink(name, target string) error {
	clean, err := cleanEntryName(target)
	if err != nil || clean == "" {
		return fmt.Errorf("hard link %s points to %q, which is not a file of the archive", name, target)
	}
	if x.kinds[clean] != 'f' {
		return fmt.Errorf("hard link %s points to %s, which is not an earlier file of the archive", name, target)
	}
	src, err := x.root.Open(clean)
	if err != nil {
		return err
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return err
	}
	return x.file(name, st.Mode(), st.Size(), src)
}

func (x *extractor) tar(file string, gzipped bool) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	var r io.Reader = f
	if gzipped {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return fmt.Errorf("gzip: %w", err)
		}
		defer gz.Close()
		r = gz
	}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil && !errors.Is(err, tar.ErrInsecurePath) {
			return fmt.Errorf("read archive: %w", err)
		}
		if hdr.Typeflag == tar.TypeXGlobalHeader {
			continue // git archive writes one; it holds no file
		}
		name, err := cleanEntryName(hdr.Name)
		if err != nil {
			return err
		}
		if name == "" || skipped(name) {
			if err := x.countBytes(hdr.Name, hdr.Size); err != nil {
				return err
			}
			continue
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = x.dir(name)
		case tar.TypeReg, tar.TypeRegA:
			err = x.file(name, hdr.FileInfo().Mode(), hdr.Size, tr)
		case tar.TypeSymlink:
			err = x.symlink(name, hdr.Linkname)
		case tar.TypeLink:
			err = x.hardlink(name, hdr.Linkname)
		case tar.TypeChar, tar.TypeBlock:
			err = fmt.Errorf("entry %s is a device file; a tool holds files, folders and links only", name)
		case tar.TypeFifo:
			err = fmt.Errorf("entry %s is a named pipe; a tool holds files, folders and links only", name)
		default:
			err = fmt.Errorf("entry %s has tar type %q, which is not a file, folder or link", name, hdr.Typeflag)
		}
		if err != nil {
			return err
		}
	}
}

// maxLinkTarget bounds a zip symlink's target (stored as the entry's content).
const maxLinkTarget = 4 << 10

func (x *extractor) zip(file string) error {
	zr, err := zip.OpenReader(file)
	if err != nil {
		return fmt.Errorf("read zip: %w", err)
	}
	defer zr.Close()
	if len(zr.File) > x.lim.MaxFiles {
		return &LimitError{fmt.Sprintf("the archive lists %d entries, more than the limit of %d", len(zr.File), x.lim.MaxFiles)}
	}
	for _, zf := range zr.File {
		// Some Windows tools write backslashes, which the zip format does not allow.
		name, err := cleanEntryName(strings.ReplaceAll(zf.Name, "\\", "/"))
		if err != nil {
			return err
		}
		if name == "" || skipped(name) {
			continue
		}
		mode := zf.Mode()
		switch {
		case mode&fs.ModeSymlink != 0:
			target, err := readZipEntry(zf, maxLinkTarget)
			if err != nil {
				return fmt.Errorf("read link %s: %w", name, err)
			}
			err = x.symlink(name, string(target))
			if err != nil {
				return err
			}
		case mode.IsDir() || strings.HasSuffix(zf.Name, "/"):
			if err := x.dir(name); err != nil {
				return err
			}
		case mode.IsRegular():
			if zf.UncompressedSize64 > uint64(x.lim.MaxUnpacked) {
				return &LimitError{fmt.Sprintf("entry %s is %d bytes, more than the limit of %d bytes unpacked", name, zf.UncompressedSize64, x.lim.MaxUnpacked)}
			}
			rc, err := zf.Open()
			if err != nil {
				return fmt.Errorf("read %s: %w", name, err)
			}
			err = x.file(name, mode, int64(zf.UncompressedSize64), rc)
			rc.Close()
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("entry %s is a %s; a tool holds files, folders and links only", name, describeMode(mode))
		}
	}
	return nil
}

func readZipEntry(zf *zip.File, limit int64) ([]byte, error) {
	rc, err := zf.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("target longer than %d bytes", limit)
	}
	return data, nil
}

func describeMode(m fs.FileMode) string {
	switch {
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "device file"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	}
	return "special file (" + m.String() + ")"
}

// checkLinks resolves every symlink below dir and refuses one that ends outside dir or
// nowhere. The entry-by-entry check judges each link alone; this one sees chains such as
// a link to "." followed by a link that climbs from there.
func checkLinks(dir string) error {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		target, _ := os.Readlink(p)
		// Judge the target from where the link really is (its parent may be reached through
		// other links) before asking whether it exists.
		parent, err := filepath.EvalSymlinks(filepath.Dir(p))
		if err != nil {
			return err
		}
		if filepath.IsAbs(target) || !within(real, filepath.Join(parent, target)) {
			return fmt.Errorf("link %s points outside the tool (to %s)", filepath.ToSlash(rel), target)
		}
		resolved, err := filepath.EvalSymlinks(p)
		if err != nil {
			return fmt.Errorf("link %s points to %s, which does not exist in the tool", filepath.ToSlash(rel), target)
		}
		if !within(real, resolved) {
			return fmt.Errorf("link %s points outside the tool (to %s)", filepath.ToSlash(rel), target)
		}
		return nil
	})
}

func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// copyFolder copies a local tool folder into dst (which must not exist) under the same
// rules as an archive. node_modules and .git are left behind: dependencies are installed
// afresh for the copy, and history is not part of a tool.
func copyFolder(src, dst string, lim Limits) error {
	// The folder may be given as a link to it; its files are what is copied.
	src, err := filepath.EvalSymlinks(src)
	if err != nil {
		return err
	}
	if err := os.Mkdir(dst, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer root.Close()
	x := &extractor{root: root, lim: lim, kinds: map[string]byte{}}
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == src {
			return nil
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git") {
			return filepath.SkipDir
		}
		switch t := d.Type(); {
		case t.IsDir():
			return x.dir(name)
		case t&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := checkLinkTarget(name, target); err != nil {
				return fmt.Errorf("%w: a tool folder must hold what it uses (copy the file in)", err)
			}
			return x.symlink(name, target)
		case t.IsRegular():
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			st, err := f.Stat()
			if err != nil {
				return err
			}
			return x.file(name, st.Mode(), st.Size(), f)
		default:
			return fmt.Errorf("%s is a %s; a tool folder holds files, folders and links only", name, describeMode(t))
		}
	})
	if err != nil {
		return err
	}
	return checkLinks(dst)
}

// readTagger marks errors of the source, so a corrupt archive is not reported as a failed
// write.
type readTagger struct{ r io.Reader }

type readError struct{ err error }

func (e readError) Error() string { return e.err.Error() }

func (t readTagger) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = readError{err}
	}
	return n, err
}

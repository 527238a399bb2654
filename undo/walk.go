package undo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	unix "github.com/jean2/jean2/internal/xunix"
)

// errTooManyEntries stops a walk of a root with more paths than MaxEntries.
var errTooManyEntries = errors.New("too many entries")

// walker records the state of one root. It never follows a symlink: every directory is
// opened relative to its parent's descriptor with O_NOFOLLOW, every path is examined with
// fstatat(AT_SYMLINK_NOFOLLOW), and only regular files are opened for reading, so a link
// to a file outside the root (/etc/passwd) is recorded as a link and its target is never
// read. Walking by descriptor also means a directory swapped for a link mid-walk cannot
// lead the walk elsewhere.
type walker struct {
	s     *Snapshots
	ctx   context.Context
	root  string
	base  *manifest // the previous manifest of the root, whose hashes may be reused; may be nil
	start time.Time // when the walk began: files changed since then, minus the racy window, are racy

	out    []entry
	budget int64 // bytes the walk may still read into the store
	reads  int   // files whose content was read
	buf    bytes.Buffer
}

// walkRoot records the state of root (a real, absolute directory path). It returns the new
// manifest and whether it differs from base.
func (s *Snapshots) walkRoot(ctx context.Context, root string, base *manifest) (*manifest, bool, error) {
	w := &walker{s: s, ctx: ctx, root: root, base: base, start: time.Now(), budget: s.opts.MaxNewBytes}
	if base != nil {
		w.out = make([]entry, 0, len(base.entries))
	}
	if err := w.walkTop(); err != nil {
		return nil, false, err
	}
	m := &manifest{root: root, entries: w.out}
	changed := base == nil || len(base.entries) != len(m.entries)
	for i := 0; !changed && i < len(m.entries); i++ {
		changed = !sameEntry(&base.entries[i], &m.entries[i])
	}
	return m, changed, nil
}

func (w *walker) add(e entry) { w.out = append(w.out, e) }

// walkTop records the root itself, then what it holds. A root removed or replaced during a
// turn is recorded as it stands (nothing, a link, a file), so the change shows.
func (w *walker) walkTop() error {
	var st unix.Stat_t
	if err := unix.Lstat(w.root, &st); err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return nil
		}
		return fmt.Errorf("stat %s: %w", w.root, err)
	}
	e := entry{rel: "", key: keyOf(&st)}
	e.kind = kindOfMode(e.key.mode)
	if e.kind != kindDir {
		if e.kind == kindSymlink {
			e.target, _ = os.Readlink(w.root)
		}
		e.note = "the folder was replaced by a " + describe(e.key.mode)
		w.add(e)
		return nil
	}
	fd, err := unix.Open(w.root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", w.root, err)
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return fmt.Errorf("stat %s: %w", w.root, err)
	}
	w.add(entry{rel: "", kind: kindDir, key: keyOf(&st)})
	return w.dir(fd, "")
}

// sameEntry compares everything a manifest stores.
func sameEntry(a, b *entry) bool {
	return a.rel == b.rel && a.kind == b.kind && a.key == b.key && a.hashed == b.hashed && a.hash == b.hash &&
		a.racy == b.racy && a.target == b.target && a.note == b.note && a.skipped == b.skipped && a.unknown == b.unknown
}

// dir records the entries of the directory open at fd (rel to the root) and closes fd.
func (w *walker) dir(fd int, rel string) error {
	f := os.NewFile(uintptr(fd), absPath(w.root, rel))
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		// The directory is recorded but its content is unknown; a restore that needs it
		// refuses, naming it.
		w.out[len(w.out)-1].note = fmt.Sprintf("could not be listed: %v", err)
		return nil
	}
	slices.Sort(names)
	self := len(w.out) - 1
	for _, name := range names {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		child := name
		if rel != "" {
			child = rel + "/" + name
		}
		if w.s.skip[name] || w.s.isOwnDir(absPath(w.root, child)) {
			w.out[self].skipped = true
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue // removed while we looked
			}
			w.add(entry{rel: child, kind: kindOther, unknown: true, note: fmt.Sprintf("could not be examined: %v", err)})
			continue
		}
		if len(w.out) >= w.s.opts.MaxEntries {
			return errTooManyEntries
		}
		e := entry{rel: child, key: keyOf(&st)}
		e.kind = kindOfMode(e.key.mode)
		switch e.kind {
		case kindDir:
			w.add(e)
			cfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				w.out[len(w.out)-1].note = fmt.Sprintf("could not be listed: %v", err)
				continue
			}
			if err := w.dir(cfd, child); err != nil {
				return err
			}
		case kindSymlink:
			e.target, err = readlinkat(fd, name)
			if err != nil {
				e.kind, e.note = kindOther, fmt.Sprintf("the link could not be read: %v", err)
			}
			w.add(e)
		case kindFile:
			w.file(fd, name, &e)
			w.add(e)
		default:
			e.note = "a " + describe(e.key.mode) + ", which a snapshot cannot copy"
			w.add(e)
		}
	}
	return nil
}

func readlinkat(dirfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// file fills in the content of the regular file e: the base's hash when its stat key is
// unchanged and was not racy, else by reading it into the blob store.
func (w *walker) file(dirfd int, name string, e *entry) {
	if w.base != nil {
		if old, _ := w.base.lookup(e.rel); old != nil && old.kind == kindFile && old.key == e.key && !old.racy {
			// A file read before keeps its hash; one too large to read stays so until it
			// changes. One left out for the budget is read again.
			if old.hashed || e.key.size > w.s.opts.MaxFileSize {
				e.hashed, e.hash, e.note = old.hashed, old.hash, old.note
				return
			}
		}
	}
	if e.key.size > w.s.opts.MaxFileSize {
		e.note = fmt.Sprintf("it was larger (%d bytes) than the %d-byte limit for undo copies", e.key.size, w.s.opts.MaxFileSize)
		return
	}
	if e.key.size > w.budget {
		e.note = fmt.Sprintf("the snapshot had already read its limit of %d bytes", w.s.opts.MaxNewBytes)
		return
	}
	// A file written while we read it is read again, once; still moving, it is left out.
	for attempt := 0; ; attempt++ {
		key, data, err := w.read(dirfd, name, absPath(w.root, e.rel))
		if err != nil {
			e.note = fmt.Sprintf("it could not be read: %v", err)
			return
		}
		if key != e.key {
			if attempt == 0 {
				e.key = key
				continue
			}
			e.note = "it kept changing while it was read"
			return
		}
		w.budget -= int64(len(data))
		e.hash = sha256.Sum256(data)
		if _, err := w.s.blobs.put(e.hash, data); err != nil {
			e.note = err.Error()
			return
		}
		e.hashed = true
		// ctime, not mtime: a program can set mtime back, but not ctime.
		e.racy = e.key.ctime >= w.start.Add(-w.s.racy).UnixNano()
		return
	}
}

// read reads a regular file whole and returns its stat key after reading: a key that
// differs from the one the walk saw means the file changed in between.
func (w *walker) read(dirfd int, name, path string) (statKey, []byte, error) {
	// O_NONBLOCK: if the file was swapped for a named pipe since fstatat, open must not
	// wait for a writer.
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return statKey{}, nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return statKey{}, nil, err
	}
	key := keyOf(&st)
	if !key.mode.IsRegular() {
		return key, nil, fmt.Errorf("it became a %s", describe(key.mode))
	}
	if w.s.onRead != nil {
		w.s.onRead(path)
	}
	w.reads++
	w.buf.Reset()
	if _, err := io.Copy(&w.buf, io.LimitReader(f, w.s.opts.MaxFileSize+1)); err != nil {
		return statKey{}, nil, err
	}
	if int64(w.buf.Len()) > w.s.opts.MaxFileSize {
		return statKey{}, nil, fmt.Errorf("it grew past the %d-byte limit while it was read", w.s.opts.MaxFileSize)
	}
	if err := unix.Fstat(fd, &st); err != nil {
		return statKey{}, nil, err
	}
	return keyOf(&st), w.buf.Bytes(), nil
}

package undo

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"path/filepath"
	"strings"
)

// kind is what stands at a path.
type kind uint8

const (
	kindNone kind = iota // nothing: the path does not exist
	kindFile
	kindDir
	kindSymlink
	kindOther // a named pipe, socket or device: recorded, never copied or recreated
)

func (k kind) String() string {
	switch k {
	case kindFile:
		return "file"
	case kindDir:
		return "dir"
	case kindSymlink:
		return "symlink"
	case kindOther:
		return "other"
	}
	return ""
}

func kindOfMode(m fs.FileMode) kind {
	switch {
	case m.IsRegular():
		return kindFile
	case m.IsDir():
		return kindDir
	case m&fs.ModeSymlink != 0:
		return kindSymlink
	}
	return kindOther
}

// describe names a kind of file for a person.
func describe(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// statKey is what a walk compares to decide whether a path may have changed since it was
// last read. Equal keys (and a reading that was not racy) let a walk reuse the content hash
// instead of reading the file again.
type statKey struct {
	size, mtime, ctime int64
	ino, dev           uint64
	mode               fs.FileMode
}

// digest is a SHA-256 content hash: the name of a blob.
type digest [sha256.Size]byte

func (d digest) String() string { return hex.EncodeToString(d[:]) }

// entry is one path of a snapshot of a root.
type entry struct {
	rel  string // relative to the root, with '/' separators; "" is the root itself
	kind kind
	key  statKey
	// hashed says the file's content was read: hash is its SHA-256 and the blob store holds
	// it. A file that is not hashed cannot be restored; note says why.
	hashed bool
	hash   digest
	// racy says the file changed so close to the walk that a later change within the same
	// clock tick could leave its key as it is: the next walk reads it again.
	racy   bool
	target string // a symlink's target
	// note says why a file's content was not kept or a directory could not be listed.
	note string
	// skipped says a directory holds entries a snapshot does not record (.git,
	// node_modules…): it cannot be recreated whole from the snapshot.
	skipped bool
	// unknown says the path could not even be examined (fstatat failed): its state is not
	// known, so no change is claimed for it.
	unknown bool
}

// sameState reports whether two entries describe the same state of a path: kind, mode and
// content. Files not read on either side compare by their stat key.
func sameState(a, b *entry) bool {
	if a.kind != b.kind || a.key.mode != b.key.mode {
		return false
	}
	switch a.kind {
	case kindFile:
		if a.hashed && b.hashed {
			return a.hash == b.hash
		}
		return !a.hashed && !b.hashed && a.key == b.key
	case kindSymlink:
		return a.target == b.target
	case kindDir:
		return true
	}
	return a.key == b.key
}

// under reports whether rel lies strictly below dir (both relative, '/'-separated).
func under(rel, dir string) bool {
	if dir == "" {
		return rel != ""
	}
	return len(rel) > len(dir) && rel[len(dir)] == '/' && strings.HasPrefix(rel, dir)
}

// absPath joins a root and a relative path.
func absPath(root, rel string) string {
	if rel == "" {
		return root
	}
	return filepath.Join(root, filepath.FromSlash(rel))
}

// comparePaths orders paths so that a directory comes right before everything below it:
// component by component, each compared bytewise. It is the order of a walk that visits
// the names of each directory sorted.
func comparePaths(a, b string) int {
	for {
		if a == b {
			return 0
		}
		if a == "" {
			return -1
		}
		if b == "" {
			return 1
		}
		ah, at, _ := strings.Cut(a, "/")
		bh, bt, _ := strings.Cut(b, "/")
		if c := strings.Compare(ah, bh); c != 0 {
			return c
		}
		a, b = at, bt
	}
}

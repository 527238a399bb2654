package undo

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/jean2/jean2/internal/fsutil"
)

// manifest is the state of one root at one moment: every path below it that a snapshot
// records, in walk order (a directory right before everything below it, names sorted), so
// the entries below a directory follow it as one run. A manifest never changes once made;
// it is stored under the hash of its encoding, which is its id.
type manifest struct {
	id      string // hex SHA-256 of the encoding; "" until saved
	root    string
	entries []entry
	// index maps rel → position, built on first lookup; a manifest is shared by the turns
	// that began on it, whose diffs may run at once.
	indexOnce sync.Once
	index     map[string]int
}

func (m *manifest) lookup(rel string) (*entry, int) {
	m.indexOnce.Do(func() {
		m.index = make(map[string]int, len(m.entries))
		for i := range m.entries {
			m.index[m.entries[i].rel] = i
		}
	})
	i, ok := m.index[rel]
	if !ok {
		return nil, -1
	}
	return &m.entries[i], i
}

// subtree returns the entries strictly below the directory at position i.
func (m *manifest) subtree(i int) []entry {
	dir := m.entries[i].rel
	j := i + 1
	for j < len(m.entries) && under(m.entries[j].rel, dir) {
		j++
	}
	return m.entries[i+1 : j]
}

const manifestMagic = "jean2-undo-manifest-1\n"

const (
	flagHashed = 1 << iota
	flagRacy
	flagSkipped
	flagUnknown
)

// encode writes the manifest in a compact binary form: the format's name, the root, then
// each entry with varints.
func (m *manifest) encode() []byte {
	var b bytes.Buffer
	b.Grow(64 + len(m.entries)*96)
	b.WriteString(manifestMagic)
	putString(&b, m.root)
	putUvarint(&b, uint64(len(m.entries)))
	for i := range m.entries {
		e := &m.entries[i]
		putString(&b, e.rel)
		var flags byte
		if e.hashed {
			flags |= flagHashed
		}
		if e.racy {
			flags |= flagRacy
		}
		if e.skipped {
			flags |= flagSkipped
		}
		if e.unknown {
			flags |= flagUnknown
		}
		b.WriteByte(byte(e.kind))
		b.WriteByte(flags)
		putUvarint(&b, uint64(e.key.mode))
		putVarint(&b, e.key.size)
		putVarint(&b, e.key.mtime)
		putVarint(&b, e.key.ctime)
		putUvarint(&b, e.key.ino)
		putUvarint(&b, e.key.dev)
		if e.hashed {
			b.Write(e.hash[:])
		}
		putString(&b, e.target)
		putString(&b, e.note)
	}
	return b.Bytes()
}

func putUvarint(b *bytes.Buffer, v uint64) {
	var buf [binary.MaxVarintLen64]byte
	b.Write(buf[:binary.PutUvarint(buf[:], v)])
}

func putVarint(b *bytes.Buffer, v int64) {
	var buf [binary.MaxVarintLen64]byte
	b.Write(buf[:binary.PutVarint(buf[:], v)])
}

func putString(b *bytes.Buffer, s string) {
	putUvarint(b, uint64(len(s)))
	b.WriteString(s)
}

// decodeManifest reads what encode wrote; anything malformed is an error, never a panic.
func decodeManifest(data []byte) (*manifest, error) {
	r := &reader{data: data}
	if string(r.take(len(manifestMagic))) != manifestMagic {
		return nil, errors.New("not a manifest of this jean2")
	}
	m := &manifest{root: r.str()}
	n := r.uvarint()
	if r.err == nil && n > uint64(len(data)) {
		r.err = errors.New("entry count larger than the file")
	}
	if r.err != nil {
		return nil, r.err
	}
	m.entries = make([]entry, 0, n)
	for range n {
		var e entry
		e.rel = r.str()
		kb := r.take(2)
		if r.err != nil {
			return nil, r.err
		}
		e.kind = kind(kb[0])
		flags := kb[1]
		e.key.mode = fs.FileMode(r.uvarint())
		e.key.size = r.varint()
		e.key.mtime = r.varint()
		e.key.ctime = r.varint()
		e.key.ino = r.uvarint()
		e.key.dev = r.uvarint()
		e.hashed, e.racy, e.skipped, e.unknown = flags&flagHashed != 0, flags&flagRacy != 0, flags&flagSkipped != 0, flags&flagUnknown != 0
		if e.hashed {
			copy(e.hash[:], r.take(len(e.hash)))
		}
		e.target = r.str()
		e.note = r.str()
		if r.err != nil {
			return nil, r.err
		}
		if e.kind < kindFile || e.kind > kindOther {
			return nil, fmt.Errorf("entry %q has an unknown kind %d", e.rel, e.kind)
		}
		m.entries = append(m.entries, e)
	}
	if len(r.data) != 0 {
		return nil, errors.New("trailing bytes after the last entry")
	}
	return m, nil
}

type reader struct {
	data []byte
	err  error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.data) {
		r.err = errors.New("truncated manifest")
		return nil
	}
	out := r.data[:n]
	r.data = r.data[n:]
	return out
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.data)
	if n <= 0 {
		r.err = errors.New("malformed number in manifest")
		return 0
	}
	r.data = r.data[n:]
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.data)
	if n <= 0 {
		r.err = errors.New("malformed number in manifest")
		return 0
	}
	r.data = r.data[n:]
	return v
}

func (r *reader) str() string {
	n := r.uvarint()
	if r.err == nil && n > uint64(len(r.data)) {
		r.err = errors.New("truncated manifest")
	}
	return string(r.take(int(n)))
}

// saveManifest stores m under the hash of its encoding, unless a manifest with that id is
// stored already, and sets m.id.
func (s *Snapshots) saveManifest(m *manifest) error {
	data := m.encode()
	sum := sha256.Sum256(data)
	m.id = hex.EncodeToString(sum[:])
	p := filepath.Join(s.dir, "manifests", m.id)
	if _, err := os.Lstat(p); err == nil {
		return nil
	}
	if err := fsutil.WriteFileAtomic(p, data); err != nil {
		return fmt.Errorf("save the snapshot of %s: %w", m.root, err)
	}
	return nil
}

// loadManifest reads a stored manifest and checks it against its id.
func (s *Snapshots) loadManifest(id string) (*manifest, error) {
	if !validID(id) {
		return nil, fmt.Errorf("invalid manifest id %q", id)
	}
	data, err := os.ReadFile(filepath.Join(s.dir, "manifests", id))
	if err != nil {
		return nil, fmt.Errorf("load snapshot %s: %w", id, err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != id {
		return nil, fmt.Errorf("load snapshot %s: the file is damaged", id)
	}
	m, err := decodeManifest(data)
	if err != nil {
		return nil, fmt.Errorf("load snapshot %s: %w", id, err)
	}
	m.id = id
	return m, nil
}

// rootPointer names the latest manifest of a root, so a walk after a restart can reuse
// its hashes instead of reading every file again.
type rootPointer struct {
	Root     string `json:"root"`
	Manifest string `json:"manifest"`
}

func (s *Snapshots) pointerPath(root string) string {
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(s.dir, "roots", hex.EncodeToString(sum[:16])+".json")
}

func (s *Snapshots) savePointer(m *manifest) error {
	data, err := json.Marshal(rootPointer{Root: m.root, Manifest: m.id})
	if err != nil {
		return err
	}
	if err := fsutil.WriteFileAtomic(s.pointerPath(m.root), data); err != nil {
		return fmt.Errorf("save the latest snapshot of %s: %w", m.root, err)
	}
	return nil
}

// loadLatest returns the latest manifest of root, or nil when there is none or it cannot be
// read (the walk then reads every file: slower, never wrong).
func (s *Snapshots) loadLatest(root string) *manifest {
	data, err := os.ReadFile(s.pointerPath(root))
	if err != nil {
		return nil
	}
	var p rootPointer
	if json.Unmarshal(data, &p) != nil || p.Root != root {
		return nil
	}
	m, err := s.loadManifest(p.Manifest)
	if err != nil || m.root != root {
		s.log.Warn("undo: the latest snapshot of a folder cannot be read; reading the folder again", "root", root, "err", err)
		return nil
	}
	return m
}

// validID reports whether id is a hex SHA-256 (a manifest id).
func validID(id string) bool {
	if len(id) != 64 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil
}

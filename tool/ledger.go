package tool

import (
	"io/fs"
	"sync"
	"time"
)

// Change is one entry of a turn's ledger: a file the turn changed, or tried to.
type Change struct {
	Path   string `json:"path"`
	Tool   string `json:"tool"`
	CallID string `json:"callId,omitempty"`
	Op     string `json:"op,omitempty"` // write, append, mkdir, rm, rename, or "" when the tool recorded it
	// Disk is false when the change never reached the disk: refused by policy, or failed
	// before anything changed. Such entries carry no undo data and Restore skips them.
	Disk  bool      `json:"disk"`
	OK    bool      `json:"ok"`
	Error string    `json:"error,omitempty"`
	At    time.Time `json:"at"`
	// Before is what stood at Path before the change, for putting it back. Nil when the
	// tool recorded the change itself and the host holds no undo data.
	Before *FileState `json:"before,omitempty"`
}

// FileState is a snapshot of one path: absent, a file (content and mode) or a directory
// (mode and entries).
type FileState struct {
	Exists  bool        `json:"exists"`
	IsDir   bool        `json:"isDir,omitempty"`
	Mode    fs.FileMode `json:"mode,omitempty"`
	Content []byte      `json:"content,omitempty"`
	Entries []DirState  `json:"entries,omitempty"`
	// Incomplete is set when the snapshot was cut by a size limit; such a state cannot be
	// restored exactly and Restore refuses it.
	Incomplete string `json:"incomplete,omitempty"`
}

// DirState is one entry of a directory snapshot.
type DirState struct {
	Name  string    `json:"name"`
	State FileState `json:"state"`
}

// Ledger is one turn's list of changes. It is safe for concurrent use.
type Ledger struct {
	mu      sync.Mutex
	changes []Change
}

// NewLedger makes an empty ledger (createLedger).
func NewLedger() *Ledger { return &Ledger{} }

// Record adds a change; a zero At is set to now.
func (l *Ledger) Record(c Change) {
	if c.At.IsZero() {
		c.At = time.Now()
	}
	l.mu.Lock()
	l.changes = append(l.changes, c)
	l.mu.Unlock()
}

// Len is the number of entries recorded so far.
func (l *Ledger) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.changes)
}

// Changes returns a copy of the entries in the order they were recorded.
func (l *Ledger) Changes() []Change {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Change(nil), l.changes...)
}

// Summary counts what the turn changed: Changed is the number of distinct paths with a
// successful write ("Changed N files"), Failed the number of failed changes.
type Summary struct {
	Changed int      `json:"changed"`
	Failed  int      `json:"failed"`
	Paths   []string `json:"paths"`
}

// Summary summarizes the ledger.
func (l *Ledger) Summary() Summary {
	return Summarize(l.Changes())
}

// Summarize summarizes a list of changes.
func Summarize(changes []Change) Summary {
	s := Summary{Paths: []string{}}
	seen := map[string]bool{}
	for _, c := range changes {
		if !c.OK {
			s.Failed++
			continue
		}
		if !seen[c.Path] {
			seen[c.Path] = true
			s.Paths = append(s.Paths, c.Path)
		}
	}
	s.Changed = len(s.Paths)
	return s
}

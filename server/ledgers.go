package server

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"time"
	"unicode/utf8"

	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/tool"
)

// maxDiffText is the largest file whose text the ledger view sends for a diff.
const maxDiffText = 256 << 10

// fileSide is one side of a changed file in the ledger view.
type fileSide struct {
	Exists   bool        `json:"exists"`
	IsDir    bool        `json:"isDir,omitempty"`
	Mode     fs.FileMode `json:"mode,omitempty"`
	Text     *string     `json:"text,omitempty"`
	Binary   bool        `json:"binary,omitempty"`
	TooLarge bool        `json:"tooLarge,omitempty"`
	Size     int64       `json:"size,omitempty"`
	// Unknown is set when jean2 holds no record of this side (a change the tool recorded
	// itself, with no undo data).
	Unknown bool `json:"unknown,omitempty"`
}

// changedFile is one path a turn changed.
type changedFile struct {
	Path   string    `json:"path"`
	Ops    []string  `json:"ops"`
	Tools  []string  `json:"tools"`
	OK     bool      `json:"ok"` // at least one change of the path succeeded
	Errors []string  `json:"errors"`
	Before *fileSide `json:"before"`
	After  *fileSide `json:"after"`
}

type changeCounts struct {
	Files  int `json:"files"`
	Failed int `json:"failed"`
}

// turnChanges is one turn's ledger as the UI shows it: "Changed N files" and the diff.
type turnChanges struct {
	LedgerID   string        `json:"ledgerId"`
	MessageID  string        `json:"messageId"`
	MessageSeq int64         `json:"messageSeq"`
	CreatedAt  time.Time     `json:"createdAt"`
	RestoredAt time.Time     `json:"restoredAt,omitzero"`
	Changed    changeCounts  `json:"changed"`
	Files      []changedFile `json:"files"`
}

func (s *Server) listLedgers(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if _, err := s.session(r.Context(), id); err != nil {
		return err
	}
	ledgers, err := s.db.ListLedgers(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"turns": viewLedgers(ledgers)})
	return nil
}

// viewLedgers makes the ledger view of a session's ledgers, oldest first. A file's "after"
// is what the next turn that touched it found there (its first recorded before-state), or
// the disk now when no later turn touched it.
func viewLedgers(ledgers []store.Ledger) []turnChanges {
	out := make([]turnChanges, 0, len(ledgers))
	for i, l := range ledgers {
		tc := turnChanges{LedgerID: l.ID, MessageID: l.MessageID, MessageSeq: l.MessageSeq, CreatedAt: l.CreatedAt,
			RestoredAt: l.RestoredAt, Files: []changedFile{}}
		index := map[string]int{}
		succeeded := map[string]bool{}
		for _, c := range l.Changes {
			if !c.OK {
				tc.Changed.Failed++
			} else if !succeeded[c.Path] {
				succeeded[c.Path] = true
				tc.Changed.Files++
			}
			j, seen := index[c.Path]
			if !seen {
				j = len(tc.Files)
				index[c.Path] = j
				tc.Files = append(tc.Files, changedFile{Path: c.Path, Ops: []string{}, Tools: []string{}, Errors: []string{}})
			}
			f := &tc.Files[j]
			f.Ops = appendNew(f.Ops, c.Op)
			f.Tools = appendNew(f.Tools, c.Tool)
			f.OK = f.OK || c.OK
			if c.Error != "" {
				f.Errors = append(f.Errors, c.Error)
			}
			if f.Before == nil && c.Before != nil {
				f.Before = side(*c.Before)
			}
		}
		for j := range tc.Files {
			f := &tc.Files[j]
			if f.Before == nil {
				f.Before = &fileSide{Unknown: true}
			}
			f.After = afterState(f.Path, ledgers[i+1:])
		}
		out = append(out, tc)
	}
	return out
}

func appendNew(list []string, v string) []string {
	if v == "" {
		return list
	}
	for _, x := range list {
		if x == v {
			return list
		}
	}
	return append(list, v)
}

// afterState is what stood at path after a turn: the before-state the first later turn
// recorded for it, else the disk now.
func afterState(path string, later []store.Ledger) *fileSide {
	for _, l := range later {
		for _, c := range l.Changes {
			if c.Path == path && c.Before != nil {
				return side(*c.Before)
			}
		}
	}
	return diskSide(path)
}

func side(st tool.FileState) *fileSide {
	out := &fileSide{Exists: st.Exists, IsDir: st.IsDir, Mode: st.Mode}
	if !st.Exists || st.IsDir {
		return out
	}
	out.Size = int64(len(st.Content))
	if st.Incomplete != "" {
		out.TooLarge = true
		return out
	}
	setText(out, st.Content)
	return out
}

// diskSide reads path as it is now, without following a final symlink out of the view.
func diskSide(path string) *fileSide {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &fileSide{}
	}
	if err != nil {
		return &fileSide{Unknown: true}
	}
	out := &fileSide{Exists: true, IsDir: fi.IsDir(), Mode: fi.Mode(), Size: fi.Size()}
	if !fi.Mode().IsRegular() {
		return out
	}
	if fi.Size() > maxDiffText {
		out.TooLarge = true
		return out
	}
	data, err := os.ReadFile(path)
	if err != nil || int64(len(data)) > maxDiffText {
		out.TooLarge = err == nil
		out.Unknown = err != nil
		return out
	}
	out.Size = int64(len(data))
	setText(out, data)
	return out
}

func setText(out *fileSide, data []byte) {
	switch {
	case len(data) > maxDiffText:
		out.TooLarge = true
	case !utf8.Valid(data) || containsNUL(data):
		out.Binary = true
	default:
		t := string(data)
		out.Text = &t
	}
}

func containsNUL(b []byte) bool {
	for _, c := range b {
		if c == 0 {
			return true
		}
	}
	return false
}

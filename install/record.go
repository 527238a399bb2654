package install

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/jean2/jean2/internal/fsutil"
)

// RecordFile is where an installed tool's origin is kept, inside its folder. It is part of
// the folder's content hash (the loader hashes hidden files too), which is harmless: it is
// written once, before validation, and never changes afterwards.
const RecordFile = ".jean2-install.json"

// SourceKind says what a tool was installed from.
type SourceKind string

// Source kinds.
const (
	KindFolder  SourceKind = "folder"
	KindArchive SourceKind = "archive"
	KindURL     SourceKind = "url"
	KindIndex   SourceKind = "index"
)

// Record is where an installed tool came from, so update and outdated know.
type Record struct {
	Name string `json:"name"`
	// ToolName is the name in the tool's definition, so a later install can see a clash.
	ToolName string     `json:"toolName,omitempty"`
	Source   string     `json:"source"` // what was asked for: a path, a URL or an index name
	Kind     SourceKind `json:"kind"`
	// Location is the archive or folder actually used (the expanded index URL, an absolute
	// path).
	Location string `json:"location,omitempty"`
	// Index is the index location and IndexVersion the version it gave, for KindIndex.
	Index        string    `json:"index,omitempty"`
	IndexVersion string    `json:"indexVersion,omitempty"`
	SHA256       string    `json:"sha256,omitempty"`   // of the archive
	Verified     string    `json:"verified,omitempty"` // what the digest was checked against; "" when nothing
	InstalledAt  time.Time `json:"installedAt"`
}

// ReadRecord reads a tool folder's install record; nil without one.
func ReadRecord(dir string) (*Record, error) {
	data, err := os.ReadFile(filepath.Join(dir, RecordFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, RecordFile), err)
	}
	return &r, nil
}

func writeRecord(dir string, r Record) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	// The staging folder holds what an archive unpacked (links included, kept inside it):
	// the record replaces whatever entry has its name rather than write through a link.
	return fsutil.ReplaceIn(dir, ".", RecordFile, append(data, '\n'), 0o644)
}

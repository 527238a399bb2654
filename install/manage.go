package install

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/jean2/jean2/loader"
)

// NotInstalledError is a remove or update of a tool that has no folder.
type NotInstalledError struct {
	Name      string
	Installed []string
}

func (e *NotInstalledError) Error() string {
	if len(e.Installed) == 0 {
		return fmt.Sprintf("no tool %q is installed: no tools are installed", e.Name)
	}
	return fmt.Sprintf("no tool %q is installed; installed tools are: %s", e.Name, strings.Join(e.Installed, ", "))
}

// Installed lists the tool folders under the tools folder, sorted (install scratch space
// and hidden folders are not tools).
func (in *Installer) Installed() ([]string, error) {
	entries, err := os.ReadDir(in.layout.Tools)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if !loader.IsToolFolderName(e.Name()) {
			continue
		}
		if st, err := os.Stat(filepath.Join(in.layout.Tools, e.Name())); err == nil && st.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

func (in *Installer) notInstalled(name string) error {
	names, _ := in.Installed()
	return &NotInstalledError{Name: name, Installed: names}
}

// Remove deletes a tool's folder. The folder is first renamed to a hidden name, so a
// running server sees the tool go in one step, never half deleted. A tool folder that is a
// symlink loses the link only, never what it points to. A folder jean2 did not install (no
// install record) is removed only when own is set: it is a person's own work.
func (in *Installer) Remove(ctx context.Context, name string, own bool) error {
	if CheckName(name) != nil {
		return in.notInstalled(name)
	}
	dst := filepath.Join(in.layout.Tools, name)
	fi, err := os.Lstat(dst)
	if errors.Is(err, fs.ErrNotExist) {
		return in.notInstalled(name)
	} else if err != nil {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	if fi.IsDir() && !own {
		// A folder a person wrote (`tools new`, or by hand) holds their only copy of its
		// source; a link is dropped without touching what it leads to.
		if rec, err := ReadRecord(dst); err != nil || rec == nil {
			return fmt.Errorf("remove %s: %s was not installed by jean2 (it has no %s): it is a folder you wrote, and removing it would delete your source; delete it yourself, or run `jean2 tools remove --force %s`", name, dst, RecordFile, name)
		}
	}
	unlock, err := lockName(ctx, in.layout.Cache, name, nil)
	if err != nil {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	defer unlock()
	recoverLeftovers(dst, dst+".staging", dst+".previous")
	trash, err := os.MkdirTemp(in.layout.Tools, ".remove-")
	if err != nil {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	defer os.RemoveAll(trash)
	if err := os.Rename(dst, filepath.Join(trash, name)); err != nil {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	return nil
}

// Outdated statuses.
const (
	StatusOutdated   = "outdated"
	StatusUpToDate   = "up to date"
	StatusAhead      = "newer than the index"
	StatusUnknown    = "unknown"
	StatusNotInIndex = "not in the index"
)

// VersionStatus compares one installed tool with its index.
type VersionStatus struct {
	Name      string `json:"name"`
	Installed string `json:"installed"` // installed semantic version; "" when it has none
	Latest    string `json:"latest"`    // the index's version; "" when the index gives none
	Status    string `json:"status"`
	Outdated  bool   `json:"outdated"`
	Index     string `json:"index"`
	// Note says why the status is unknown, when it is.
	Note string `json:"note,omitempty"`
}

// tracked is an installed tool that came from an index.
type tracked struct {
	name string
	dir  string
	rec  *Record
}

// trackedTools lists installed tools whose install record says they came from an index.
func (in *Installer) trackedTools() ([]tracked, error) {
	names, err := in.Installed()
	if err != nil {
		return nil, err
	}
	var out []tracked
	for _, n := range names {
		dir := filepath.Join(in.layout.Tools, n)
		rec, err := ReadRecord(dir)
		if err != nil || rec == nil || rec.Kind != KindIndex {
			continue
		}
		out = append(out, tracked{name: n, dir: dir, rec: rec})
	}
	return out, nil
}

// indexFor returns the index a tracked tool is compared with: the configured one, else the
// one it was installed from. Indexes are read once per call through cache.
func (in *Installer) indexFor(ctx context.Context, t tracked, cache map[string]*Index) (*Index, error) {
	loc := in.indexLoc
	if loc == "" {
		loc = t.rec.Index
	}
	if idx, ok := cache[loc]; ok {
		return idx, nil
	}
	idx, err := in.loadIndexAt(ctx, loc)
	if err != nil {
		return nil, err
	}
	cache[loc] = idx
	return idx, nil
}

// compareWith says how an installed tool stands against its index entry, reading the
// entry's version from the index's VERSION file when the entry gives none.
func (in *Installer) compareWith(ctx context.Context, t tracked, idx *Index) VersionStatus {
	entry, ok, err := in.indexEntry(ctx, idx, t.name)
	if err != nil {
		s := VersionStatus{Name: t.name, Installed: loader.Inspect(t.dir).Version, Index: idx.Location, Status: StatusUnknown, Note: err.Error()}
		if s.Installed == "" {
			s.Installed = t.rec.IndexVersion
		}
		return s
	}
	return compare(t, idx, entry, ok)
}

// compare says how an installed tool stands against its index entry (ok false: the index
// does not list it).
func compare(t tracked, idx *Index, entry IndexTool, ok bool) VersionStatus {
	s := VersionStatus{Name: t.name, Installed: loader.Inspect(t.dir).Version, Index: idx.Location}
	if s.Installed == "" {
		s.Installed = t.rec.IndexVersion
	}
	if !ok {
		s.Status = StatusNotInIndex
		return s
	}
	s.Latest = entry.Version
	if s.Latest == "latest" {
		s.Latest = ""
	}
	switch {
	case s.Latest == "" && entry.SHA256 != "" && t.rec.SHA256 != "":
		// No version to compare: the published archive's digest says whether it changed.
		if strings.EqualFold(entry.SHA256, t.rec.SHA256) {
			s.Status = StatusUpToDate
		} else {
			s.Status, s.Outdated, s.Note = StatusOutdated, true, "the index's archive digest changed"
		}
	case s.Latest == "":
		s.Status, s.Note = StatusUnknown, "the index gives no version for this tool"
	case s.Installed == "":
		s.Status, s.Note = StatusUnknown, "the installed copy has no version"
	default:
		c, err := CompareVersions(s.Installed, s.Latest)
		switch {
		case err != nil:
			s.Status, s.Note = StatusUnknown, err.Error()
		case c < 0:
			s.Status, s.Outdated = StatusOutdated, true
		case c == 0:
			s.Status = StatusUpToDate
		default:
			s.Status = StatusAhead
		}
	}
	return s
}

// Outdated compares every tool installed from an index with that index.
func (in *Installer) Outdated(ctx context.Context) ([]VersionStatus, error) {
	tools, err := in.trackedTools()
	if err != nil {
		return nil, err
	}
	cache := map[string]*Index{}
	out := make([]VersionStatus, 0, len(tools))
	for _, t := range tools {
		idx, err := in.indexFor(ctx, t, cache)
		if err != nil {
			return nil, err
		}
		out = append(out, in.compareWith(ctx, t, idx))
	}
	return out, nil
}

// UpdateOutcome is what Update did with one tool.
type UpdateOutcome struct {
	VersionStatus
	Updated bool    `json:"updated"`
	Result  *Result `json:"result,omitempty"`
	Err     error   `json:"-"`
	Error   string  `json:"error,omitempty"`
}

// Update reinstalls from the index the named tools (every tool installed from an index when
// names is empty) whose index version is newer than the installed one. A failure of one
// tool is reported in its outcome and does not stop the others; the error return is for
// problems that stop everything (an unreadable tools folder, an unknown name).
func (in *Installer) Update(ctx context.Context, names []string) ([]UpdateOutcome, error) {
	tools, err := in.trackedTools()
	if err != nil {
		return nil, err
	}
	if len(names) > 0 {
		byName := map[string]tracked{}
		for _, t := range tools {
			byName[t.name] = t
		}
		var picked []tracked
		for _, n := range names {
			t, ok := byName[n]
			if ok {
				picked = append(picked, t)
				continue
			}
			dir := filepath.Join(in.layout.Tools, n)
			if _, err := os.Stat(dir); err != nil || CheckName(n) != nil {
				return nil, in.notInstalled(n)
			}
			source := "a folder or archive"
			if rec, _ := ReadRecord(dir); rec != nil {
				source = rec.Source
			}
			return nil, fmt.Errorf("%s was installed from %s, not from the tool index: reinstall it with jean2 tools install SOURCE", n, source)
		}
		tools = picked
	}
	cache := map[string]*Index{}
	var out []UpdateOutcome
	for _, t := range tools {
		idx, err := in.indexFor(ctx, t, cache)
		if err != nil {
			out = append(out, UpdateOutcome{VersionStatus: VersionStatus{Name: t.name, Status: StatusUnknown}, Err: err, Error: err.Error()})
			continue
		}
		o := UpdateOutcome{VersionStatus: in.compareWith(ctx, t, idx)}
		if o.Outdated {
			res, err := in.InstallFromIndex(ctx, idx, t.name)
			o.Result, o.Err, o.Updated = res, err, err == nil
			if err != nil {
				o.Error = err.Error()
			}
		}
		out = append(out, o)
	}
	return out, nil
}

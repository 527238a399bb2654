package sandbox

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jean2/jean2/internal/fsutil"
	"github.com/jean2/jean2/internal/rawio"
	"github.com/jean2/jean2/tool"
)

// Approvals records which tool versions a person allowed to run with the permissions they
// declare (read and write paths beyond the context, starting processes, network hosts). An approval holds
// for one version of one tool and one declaration: a changed tool asks again. The file lives
// in $JEAN2_HOME, where no tool can reach it.
type Approvals struct {
	path string
	stat *rawio.Stater // nil: os.Stat

	mu      sync.Mutex
	loaded  fileStamp
	items   []Approval
	scripts []ScriptsApproval
	grants  []Grant
}

// Grant is what a person gave one version of a tool beyond what it declares: paths to read
// or write, starting processes, network hosts. Tools written for hosts without a sandbox
// declare nothing and need such powers; a grant holds for one version, like an approval,
// and is taken back with the tool's approvals (Revoke).
type Grant struct {
	Tool        string           `json:"tool"`
	Version     string           `json:"version"` // the version's content hash
	Permissions tool.Permissions `json:"permissions"`
	GrantedAt   time.Time        `json:"grantedAt"`
}

// ScriptsApproval is the approval of the install scripts of one dependency set of a tool
// (package.json "jean2": {"installScripts": true}): they run when its dependencies are
// installed, before the tool runs at all, so they are approved apart from the tool's
// version. A changed dependency set asks again.
type ScriptsApproval struct {
	Tool         string    `json:"tool"`
	Key          string    `json:"key"` // loader.InstallScripts.Key
	Dependencies []string  `json:"dependencies"`
	ApprovedAt   time.Time `json:"approvedAt"`
}

// Approval is one approved declaration.
type Approval struct {
	Tool        string           `json:"tool"`
	Version     string           `json:"version"` // the version's content hash
	Digest      string           `json:"digest"`  // of the declaration, see PermissionsDigest
	Permissions tool.Permissions `json:"permissions"`
	ApprovedAt  time.Time        `json:"approvedAt"`
}

type approvalsFile struct {
	Approvals      []Approval        `json:"approvals"`
	InstallScripts []ScriptsApproval `json:"installScripts,omitempty"`
	Grants         []Grant           `json:"grants,omitempty"`
}

type fileStamp struct {
	size int64
	mod  time.Time
	ok   bool
}

// OpenApprovals uses the file at path (created on the first approval).
func OpenApprovals(path string) *Approvals { return &Approvals{path: path} }

// OpenApprovalsStat is OpenApprovals whose check of the file at every call stats through
// st (raw where that is safe: rawio.Stater says why).
func OpenApprovalsStat(path string, st *rawio.Stater) *Approvals {
	return &Approvals{path: path, stat: st}
}

// Path is where the approvals are kept.
func (a *Approvals) Path() string { return a.path }

// PermissionsDigest names a declaration independently of the order of its paths.
func PermissionsDigest(p tool.Permissions) string {
	read := slices.Clone(p.Read)
	write := slices.Clone(p.Write)
	network := slices.Clone(p.Network)
	slices.Sort(read)
	slices.Sort(write)
	slices.Sort(network)
	// A declaration without network entries or a raised memory cap digests as it did before
	// they existed, so earlier approvals still hold.
	b, _ := json.Marshal(tool.Permissions{Read: read, Write: write, ChildProcess: p.ChildProcess, MemoryMB: p.MemoryMB, Network: network, Data: p.Data})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// Declares reports whether a definition asks for anything beyond its context.
func Declares(p *tool.Permissions) bool {
	return p != nil && (len(p.Read) > 0 || len(p.Write) > 0 || p.ChildProcess || p.MemoryMB > 0 || len(p.Network) > 0 || p.Data != "")
}

// Approved reports whether this version's declaration was approved. The file is read again
// when it changed, so an approval given by another jean2 process counts at once.
func (a *Approvals) Approved(toolName, version string, p tool.Permissions) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.refreshLocked(); err != nil {
		return false, err
	}
	digest := PermissionsDigest(p)
	for _, x := range a.items {
		if x.Tool == toolName && x.Version == version && x.Digest == digest {
			return true, nil
		}
	}
	return false, nil
}

// Approve records the approval of a version's declaration; approvals of the tool's other
// versions are dropped.
func (a *Approvals) Approve(toolName, version string, p tool.Permissions) error {
	return a.change(func(f *approvalsFile) bool {
		kept := slices.DeleteFunc(slices.Clone(f.Approvals), func(x Approval) bool { return x.Tool == toolName })
		f.Approvals = append(kept, Approval{Tool: toolName, Version: version, Digest: PermissionsDigest(p), Permissions: p, ApprovedAt: time.Now().UTC().Truncate(time.Second)})
		return true
	})
}

// ScriptsApproved reports whether the install scripts of the dependency set key were
// approved.
func (a *Approvals) ScriptsApproved(key string) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.refreshLocked(); err != nil {
		return false, err
	}
	for _, x := range a.scripts {
		if x.Key == key {
			return true, nil
		}
	}
	return false, nil
}

// ApproveScripts records the approval of the install scripts of a tool's dependency set;
// the approvals of its other sets are dropped.
func (a *Approvals) ApproveScripts(toolName, key string, deps []string) error {
	return a.change(func(f *approvalsFile) bool {
		kept := slices.DeleteFunc(slices.Clone(f.InstallScripts), func(x ScriptsApproval) bool { return x.Tool == toolName || x.Key == key })
		f.InstallScripts = append(kept, ScriptsApproval{Tool: toolName, Key: key, Dependencies: slices.Clone(deps), ApprovedAt: time.Now().UTC().Truncate(time.Second)})
		return true
	})
}

// Revoke drops every approval of a tool, its install scripts' and its grants too.
func (a *Approvals) Revoke(toolName string) error {
	return a.change(func(f *approvalsFile) bool {
		n := len(f.Approvals) + len(f.InstallScripts) + len(f.Grants)
		f.Approvals = slices.DeleteFunc(slices.Clone(f.Approvals), func(x Approval) bool { return x.Tool == toolName })
		f.InstallScripts = slices.DeleteFunc(slices.Clone(f.InstallScripts), func(x ScriptsApproval) bool { return x.Tool == toolName })
		f.Grants = slices.DeleteFunc(slices.Clone(f.Grants), func(x Grant) bool { return x.Tool == toolName })
		return len(f.Approvals)+len(f.InstallScripts)+len(f.Grants) != n
	})
}

// Granted is what a person granted this version of a tool (nil when nothing). The file is
// read again when it changed, so a grant given by another jean2 process counts at once.
func (a *Approvals) Granted(toolName, version string) (*tool.Permissions, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.refreshLocked(); err != nil {
		return nil, err
	}
	for _, g := range a.grants {
		if g.Tool == toolName && g.Version == version {
			p := g.Permissions
			return &p, nil
		}
	}
	return nil, nil
}

// AddGrant adds p to what this version of a tool was granted and returns the whole grant;
// grants of the tool's other versions are dropped.
func (a *Approvals) AddGrant(toolName, version string, p tool.Permissions) (tool.Permissions, error) {
	return a.AddGrantWithin(toolName, version, p, nil)
}

// AddGrantWithin is AddGrant that first asks fits (when not nil) whether the whole grant
// may be kept, judged on the file as it is under the lock: two grants given at once cannot
// each pass a limit that together they exceed.
func (a *Approvals) AddGrantWithin(toolName, version string, p tool.Permissions, fits func(tool.Permissions) error) (tool.Permissions, error) {
	merged := p
	var unfit error
	err := a.change(func(f *approvalsFile) bool {
		kept := f.Grants[:0:0]
		for _, g := range f.Grants {
			switch {
			case g.Tool != toolName:
				kept = append(kept, g)
			case g.Version == version:
				merged = *MergePermissions(&g.Permissions, &p)
			}
		}
		if fits != nil {
			if unfit = fits(merged); unfit != nil {
				return false
			}
		}
		f.Grants = append(kept, Grant{Tool: toolName, Version: version, Permissions: merged, GrantedAt: time.Now().UTC().Truncate(time.Second)})
		return true
	})
	if err = cmp.Or(err, unfit); err != nil {
		return tool.Permissions{}, err
	}
	return merged, nil
}

// MergePermissions is the union of two declarations (nil when both are empty): every path
// and host of either, processes if either starts them, the larger memory cap.
func MergePermissions(a, b *tool.Permissions) *tool.Permissions {
	if !Declares(a) && !Declares(b) {
		return nil
	}
	var out tool.Permissions
	for _, p := range []*tool.Permissions{a, b} {
		if p == nil {
			continue
		}
		out.Read = appendNew(out.Read, p.Read)
		out.Write = appendNew(out.Write, p.Write)
		out.Network = appendNew(out.Network, p.Network)
		out.ChildProcess = out.ChildProcess || p.ChildProcess
		out.MemoryMB = max(out.MemoryMB, p.MemoryMB)
		if p.Data != "" {
			out.Data = p.Data // a grant's (the later) wins over a declaration's
		}
	}
	return &out
}

func appendNew(list, more []string) []string {
	for _, m := range more {
		if !slices.Contains(list, m) {
			list = append(list, m)
		}
	}
	return list
}

// changeLockWait bounds the wait for another jean2 process's change of the file.
const changeLockWait = 15 * time.Second

// change applies edit to the file as it is now, under a lock that every jean2 process
// changing it takes (the CLI's `tools approve` beside a running server, two CLIs): without
// it, two processes could each read the file, change their copy and write it, and the
// second write would silently undo the first (a revoke undone by a grant to another
// tool). edit reports whether there is anything to write.
func (a *Approvals) change(edit func(f *approvalsFile) bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(a.path), 0o700); err != nil {
		return fmt.Errorf("approvals: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), changeLockWait)
	defer cancel()
	unlock, err := fsutil.LockFile(ctx, a.path+".lock", nil)
	if err != nil {
		return fmt.Errorf("approvals %s: another jean2 process is changing it: %w", a.path, err)
	}
	defer unlock()
	a.loaded = fileStamp{} // read it again under the lock, whatever its stamp says
	if err := a.refreshLocked(); err != nil {
		return err
	}
	f := approvalsFile{Approvals: a.items, InstallScripts: a.scripts, Grants: a.grants}
	if !edit(&f) {
		return nil
	}
	if err := a.writeLocked(f); err != nil {
		return err
	}
	a.items, a.scripts, a.grants = f.Approvals, f.InstallScripts, f.Grants
	return nil
}

func (a *Approvals) refreshLocked() error {
	fi, err := a.stat.Stat(a.path) // on every call's path: nil stats through os.Stat
	if errors.Is(err, fs.ErrNotExist) {
		a.items, a.scripts, a.grants, a.loaded = nil, nil, nil, fileStamp{}
		return nil
	}
	if err != nil {
		return fmt.Errorf("approvals %s: %w", a.path, err)
	}
	stamp := fileStamp{size: fi.Size(), mod: fi.ModTime(), ok: true}
	if stamp == a.loaded {
		return nil
	}
	data, err := os.ReadFile(a.path)
	if err != nil {
		return fmt.Errorf("approvals %s: %w", a.path, err)
	}
	var f approvalsFile
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&f); err != nil {
		return fmt.Errorf("approvals %s is not valid JSON (%v): fix it or remove it and approve again", a.path, err)
	}
	a.items, a.scripts, a.grants, a.loaded = f.Approvals, f.InstallScripts, f.Grants, stamp
	return nil
}

// writeLocked replaces the file atomically (a reader sees the old or the new one).
func (a *Approvals) writeLocked(f approvalsFile) error {
	if f.Approvals == nil {
		f.Approvals = []Approval{}
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(a.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("approvals: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".approvals-*.json")
	if err != nil {
		return fmt.Errorf("approvals: %w", err)
	}
	_, werr := tmp.Write(append(data, '\n'))
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("approvals %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), a.path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("approvals %s: %w", a.path, err)
	}
	a.loaded = fileStamp{} // read back on the next look, with the new stamp
	return nil
}

// DescribePermissions says in words what a declaration asks for.
func DescribePermissions(p *tool.Permissions) string {
	if !Declares(p) {
		return "nothing beyond its context"
	}
	var parts []string
	if len(p.Read) > 0 {
		parts = append(parts, "read "+strings.Join(p.Read, ", "))
	}
	if len(p.Write) > 0 {
		parts = append(parts, "write "+strings.Join(p.Write, ", "))
	}
	if p.ChildProcess {
		parts = append(parts, "start processes")
	}
	if p.MemoryMB > 0 {
		parts = append(parts, fmt.Sprintf("memory up to %d MB", p.MemoryMB))
	}
	if len(p.Network) > 0 {
		parts = append(parts, "connect to "+strings.Join(p.Network, ", "))
	}
	if p.Data != "" {
		parts = append(parts, "share the data folder of tool "+p.Data)
	}
	return strings.Join(parts, "; ")
}

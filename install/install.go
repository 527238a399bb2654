package install

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/jean2/jean2/internal/fsutil"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/loader"
	"github.com/jean2/jean2/policy"
)

// Stage names a step of an install, as progress and errors show it.
type Stage string

// Stages, in the order an install goes through them.
const (
	StageResolve     Stage = "resolve"  // read the index, find the tool, pick its folder name
	StageDownload    Stage = "download" // fetch the archive (or the index, or a .sha256)
	StageVerify      Stage = "verify"   // check the archive's sha256
	StageUnpack      Stage = "unpack"   // unpack the archive under the untrusted-archive rules
	StageCopy        Stage = "copy"     // copy a local folder
	StageCheck       Stage = "check"    // the folder is a tool: an entry file, a readable package.json
	StageInstallDeps Stage = "install dependencies"
	StageBundle      Stage = "bundle"
	StageLoad        Stage = "load" // load the module in a worker and read its definition
	StageSwap        Stage = "swap" // put the new folder in place of the old one
)

// Validator loads a tool folder the way the host would and reports what it would list.
// *host.Host is one.
type Validator interface {
	Validate(ctx context.Context, dir string) host.Entry
}

var _ Validator = (*host.Host)(nil)

// Preparer installs a folder's dependencies and bundles it ahead of validation, telling
// which stage it is in, so a person sees "installing dependencies…" while it happens. It is
// optional: Validate does the same work silently. Errors are *loader.Error.
type Preparer interface {
	Prepare(ctx context.Context, dir string, report func(Stage, string)) error
}

// Limits bound what an install may take in. Zero fields take the defaults.
type Limits struct {
	MaxDownload     int64         // archive bytes; default 256 MiB
	MaxUnpacked     int64         // bytes of all files unpacked or copied; default 512 MiB
	MaxFiles        int           // files, folders and links; default 20000
	DownloadTimeout time.Duration // one whole download; default 10 minutes
	IdleTimeout     time.Duration // a download with no bytes for this long fails; default 60 s
}

func (l Limits) withDefaults() Limits {
	if l.MaxDownload <= 0 {
		l.MaxDownload = 256 << 20
	}
	if l.MaxUnpacked <= 0 {
		l.MaxUnpacked = 512 << 20
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = 20000
	}
	if l.DownloadTimeout <= 0 {
		l.DownloadTimeout = 10 * time.Minute
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = 60 * time.Second
	}
	return l
}

// Event is one progress report. Download reports carry bytes; Note marks a line worth
// keeping (a finding or a warning) rather than a passing status.
type Event struct {
	Tool    string // the tool's folder name, or what was asked for until that is known
	Stage   Stage
	Message string
	Done    int64 // bytes downloaded so far
	Total   int64 // bytes to download; -1 when the server did not say
	Note    bool
}

// Options configure an Installer.
type Options struct {
	Layout host.Layout
	// Validator test-loads a staged folder; required by Install and Update.
	Validator Validator
	// Prepare, when set, installs dependencies and bundles before Validate, with progress.
	Prepare Preparer
	// IndexLocation is the tool index (a URL or a file path); "" when none is configured.
	// IndexLocation() reads it from the environment and config.json.
	IndexLocation string
	// Client fetches archives and the index; nil means NewHTTPClient().
	Client *http.Client
	Limits Limits
	// Progress hears about every stage; may be nil. Never called with a variable's value.
	Progress func(Event)
	// ServerEnv is where variables that the index names (beyond those the tool declares)
	// are looked for, after $JEAN2_HOME/.env. Nil means os.Environ().
	ServerEnv []string
	// Now stamps install records; nil means time.Now.
	Now func() time.Time
}

// Installer installs, removes and updates tools in one tools folder. Installs of different
// tools may run at once; installs of one tool are serialized across processes.
type Installer struct {
	layout    host.Layout
	validator Validator
	prepare   Preparer
	indexLoc  string
	client    *http.Client
	limits    Limits
	progress  func(Event)
	serverEnv []string
	now       func() time.Time
}

// New makes an Installer. opts is copied.
func New(opts Options) (*Installer, error) {
	if opts.Layout.Tools == "" || opts.Layout.Cache == "" {
		return nil, errors.New("install: the layout has no tools or cache folder")
	}
	in := &Installer{
		layout: opts.Layout, validator: opts.Validator, prepare: opts.Prepare, indexLoc: opts.IndexLocation,
		client: opts.Client, limits: opts.Limits.withDefaults(), progress: opts.Progress,
		serverEnv: opts.ServerEnv, now: opts.Now,
	}
	if in.client == nil {
		in.client = NewHTTPClient()
	}
	if in.progress == nil {
		in.progress = func(Event) {}
	}
	if in.serverEnv == nil {
		in.serverEnv = os.Environ()
	}
	if in.now == nil {
		in.now = time.Now
	}
	return in, nil
}

// Error is a failed install: which tool, from where, and the stage that failed.
type Error struct {
	Tool   string
	Source string
	Stage  Stage
	// Kept is the version still installed and serving ("" when the tool was not installed).
	Kept string
	Err  error
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("install %s: %s failed: %v", e.Tool, e.Stage, e.Err)
	if e.Kept != "" {
		msg += fmt.Sprintf(" (the installed %s is untouched)", e.Kept)
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// InstallOptions refine one Install.
type InstallOptions struct {
	// Name is the folder name to install as, instead of the one found.
	Name string
	// Index, when set, is used for index names instead of fetching the index again.
	Index *Index
}

// Result is a finished install.
type Result struct {
	Name     string     `json:"name"`     // folder name under the tools folder
	ToolName string     `json:"toolName"` // the name in the tool's definition
	Version  string     `json:"version"`
	Folder   string     `json:"folder"`
	Source   string     `json:"source"`
	Kind     SourceKind `json:"kind"`
	SHA256   string     `json:"sha256,omitempty"`
	// Verified says what the digest was checked against: "index" or the .sha256 file's
	// location; "" when nothing was verified.
	Verified string `json:"verified,omitempty"`
	// Replaced is the version that was replaced ("unversioned" when it had none), "" when
	// the tool is new.
	Replaced string      `json:"replaced,omitempty"`
	Env      []EnvReport `json:"env,omitempty"`
	Entry    host.Entry  `json:"-"`
}

// EnvReport is a variable the tool declares or the index names, and whether it has a
// value. Values are never read into it.
type EnvReport struct {
	Name      string `json:"name"`
	Set       bool   `json:"set"`
	Required  bool   `json:"required,omitempty"`
	Sensitive bool   `json:"sensitive,omitempty"`
	Withheld  bool   `json:"withheld,omitempty"` // jean2 never hands it to tools
}

// MissingEnv lists the variables without a value, required ones first.
func (r *Result) MissingEnv() []EnvReport {
	var out []EnvReport
	for _, v := range r.Env {
		if !v.Set {
			out = append(out, v)
		}
	}
	return out
}

// origin is a resolved source.
type origin struct {
	spec     string
	kind     SourceKind
	location string // folder or archive path, or archive URL
	index    *Index
	entry    *IndexTool
	name     string // from InstallOptions
}

func (o origin) remote() bool { return isURL(o.location) }

// shortLabel names the source in progress lines until the tool's name is known: the
// archive's or folder's base name.
func (o origin) shortLabel() string {
	if u, err := url.Parse(o.location); err == nil && isURL(o.location) {
		if b := path.Base(u.Path); b != "/" && b != "." {
			return b
		}
		return u.Host
	}
	if o.location != "" {
		return filepath.Base(o.location)
	}
	return o.spec
}

// knownName is the folder name when it is known before unpacking.
func (o origin) knownName() string {
	if o.name != "" {
		return o.name
	}
	if o.entry != nil {
		return o.entry.Name
	}
	return ""
}

// Install installs one tool from spec: a folder, an archive file, an http(s) URL of an
// archive, or the name of a tool in the index. Errors are *Error, naming the stage.
func (in *Installer) Install(ctx context.Context, spec string, opt InstallOptions) (*Result, error) {
	o, err := in.resolve(ctx, spec, opt)
	if err != nil {
		return nil, resolveError(spec, err)
	}
	return in.install(ctx, o)
}

func resolveError(spec string, err error) error {
	var ie *Error
	if errors.As(err, &ie) {
		return err
	}
	return &Error{Tool: spec, Source: spec, Stage: StageResolve, Err: err}
}

// resolve decides what spec is. A path that exists wins over an index name.
func (in *Installer) resolve(ctx context.Context, spec string, opt InstallOptions) (origin, error) {
	o := origin{spec: spec, name: opt.Name}
	switch {
	case spec == "":
		return o, errors.New("nothing to install: give a folder, an archive, a URL or a tool name")
	case isURL(spec):
		o.kind, o.location = KindURL, spec
		return o, nil
	case strings.HasPrefix(spec, "file://"):
		p, err := fileURLPath(spec)
		if err != nil {
			return o, err
		}
		spec = p
	}
	if st, err := os.Stat(spec); err == nil {
		abs, err := filepath.Abs(spec)
		if err != nil {
			return o, err
		}
		o.location, o.kind = abs, KindArchive
		if st.IsDir() {
			o.kind = KindFolder
		}
		return o, nil
	}
	if looksLikePath(spec) {
		return o, fmt.Errorf("%s: no such file or folder", spec)
	}
	return in.resolveIndexed(ctx, o, opt.Index)
}

// InstallFromIndex installs the tool of that name from idx; a file or folder of the same
// name is not considered.
func (in *Installer) InstallFromIndex(ctx context.Context, idx *Index, name string) (*Result, error) {
	o, err := in.resolveIndexed(ctx, origin{spec: name}, idx)
	if err != nil {
		return nil, resolveError(name, err)
	}
	return in.install(ctx, o)
}

func (in *Installer) resolveIndexed(ctx context.Context, o origin, idx *Index) (origin, error) {
	spec := o.spec
	if idx == nil {
		if in.indexLoc == "" {
			return o, fmt.Errorf("%q is not a file or folder here, and the tool index is turned off (\"toolRegistryUrl\": \"\" in %s): set JEAN2_TOOL_REGISTRY_URL or \"toolRegistryUrl\" to look it up", spec, ConfigFile(in.layout))
		}
		var err error
		if idx, err = in.LoadIndex(ctx); err != nil {
			return o, &Error{Tool: spec, Source: spec, Stage: StageDownload, Err: err}
		}
	}
	t, ok, err := in.indexEntry(ctx, idx, spec)
	if err != nil {
		return o, &Error{Tool: spec, Source: spec, Stage: StageDownload, Err: err}
	}
	if !ok {
		return o, fmt.Errorf("no tool named %q in the tool index %s (it lists: %s)", spec, idx.Location, listNames(idx.Names(), 20))
	}
	loc, err := idx.ArchiveLocation(t)
	if err != nil {
		return o, err
	}
	o.kind, o.location, o.index, o.entry = KindIndex, loc, idx, &t
	return o, nil
}

func looksLikePath(s string) bool {
	l := strings.ToLower(s)
	return strings.ContainsAny(s, `/\`) || strings.HasPrefix(s, ".") || strings.HasPrefix(s, "~") ||
		strings.HasSuffix(l, ".tar.gz") || strings.HasSuffix(l, ".tgz") || strings.HasSuffix(l, ".zip") || strings.HasSuffix(l, ".tar")
}

func listNames(names []string, max int) string {
	if len(names) == 0 {
		return "no tools"
	}
	if len(names) > max {
		return strings.Join(names[:max], ", ") + fmt.Sprintf(" and %d more", len(names)-max)
	}
	return strings.Join(names, ", ")
}

// maxVersionFileBytes bounds a VERSION file: a version and a newline.
const maxVersionFileBytes = 1 << 10

// indexEntry finds a tool of the index, with its version read from the index's VERSION
// file when the entry gives none.
func (in *Installer) indexEntry(ctx context.Context, idx *Index, name string) (IndexTool, bool, error) {
	t, ok := idx.Tool(name)
	if !ok || (t.Version != "" && t.Version != "latest") {
		return t, ok, nil
	}
	v, err := in.latestVersion(ctx, idx, name)
	if err != nil {
		return t, true, err
	}
	if v != "" {
		t.Version = v
	}
	return t, true, nil
}

// latestVersion reads a tool's latest version from the file the index's
// versionUrlTemplate names; "" when the index has no such template.
func (in *Installer) latestVersion(ctx context.Context, idx *Index, name string) (string, error) {
	loc, err := idx.VersionLocation(name)
	if err != nil || loc == "" {
		return "", err
	}
	var data []byte
	if isURL(loc) {
		data, err = in.fetchSmall(ctx, loc, "VERSION file", maxVersionFileBytes)
	} else {
		data, err = fsutil.ReadLimited(loc, maxVersionFileBytes)
	}
	if err != nil {
		return "", fmt.Errorf("the latest version of %s: %w", name, err)
	}
	v := strings.TrimSpace(string(data))
	if v == "" {
		return "", fmt.Errorf("the latest version of %s: the VERSION file %s is empty", name, redact(loc))
	}
	if _, err := ParseVersion(v); err != nil {
		return "", fmt.Errorf("the latest version of %s: the VERSION file %s holds %q, not a version (%v)", name, redact(loc), truncate(v, 80), err)
	}
	return v, nil
}

// LoadIndex reads the configured tool index.
func (in *Installer) LoadIndex(ctx context.Context) (*Index, error) {
	if in.indexLoc == "" {
		return nil, fmt.Errorf("the tool index is turned off (\"toolRegistryUrl\": \"\" in %s): set JEAN2_TOOL_REGISTRY_URL or \"toolRegistryUrl\" to use one", ConfigFile(in.layout))
	}
	return in.loadIndexAt(ctx, in.indexLoc)
}

func (in *Installer) loadIndexAt(ctx context.Context, loc string) (*Index, error) {
	var data []byte
	var err error
	if isURL(loc) {
		data, err = in.fetchSmall(ctx, loc, "tool index", maxIndexBytes)
	} else {
		data, err = fsutil.ReadLimited(loc, maxIndexBytes)
	}
	if err != nil {
		return nil, fmt.Errorf("read the tool index: %w", err)
	}
	idx, err := ParseIndex(data, loc)
	if err != nil {
		return nil, err
	}
	for _, p := range idx.Problems {
		in.progress(Event{Stage: StageResolve, Message: "tool index: skipped " + p, Note: true})
	}
	return idx, nil
}

// install runs the stages for a resolved source.
func (in *Installer) install(ctx context.Context, o origin) (*Result, error) {
	label, kept := in.earlyLabel(o)
	fail := func(stage Stage, err error) (*Result, error) {
		return nil, &Error{Tool: label, Source: o.spec, Stage: stage, Kept: kept, Err: err}
	}
	if err := os.MkdirAll(in.layout.Tools, 0o755); err != nil {
		return fail(StageResolve, err)
	}
	in.sweepScratch()
	// The scratch folder is hidden (never taken for a tool) and beside the tools, so the
	// unpacked folder can be renamed into place.
	work, err := os.MkdirTemp(in.layout.Tools, ".install-")
	if err != nil {
		return fail(StageResolve, err)
	}
	defer fsutil.RemoveTree(work)

	rec := Record{Source: o.spec, Kind: o.kind, Location: o.location}
	if o.index != nil {
		rec.Index, rec.IndexVersion = o.index.Location, o.entry.Version
	}
	content, stage, err := in.fetchContent(ctx, o, label, work, &rec)
	if err != nil {
		return fail(stage, err)
	}
	name, err := in.pickName(o, content)
	if err != nil {
		return fail(StageResolve, err)
	}
	label = name
	rec.Name = name
	rec.InstalledAt = in.now().UTC().Round(time.Second)

	unlock, err := lockName(ctx, in.layout.Cache, name, func() {
		in.progress(Event{Tool: name, Stage: StageResolve, Message: "waiting for another install of " + name, Note: true})
	})
	if err != nil {
		return fail(StageResolve, err)
	}
	defer unlock()
	return in.swapInstall(ctx, o, name, content, rec)
}

// earlyLabel names the install in errors before its folder name is settled: the name asked
// for or the index's, with the installed version that stays, or a folder's own name.
func (in *Installer) earlyLabel(o origin) (label, kept string) {
	label = o.shortLabel()
	if known := o.knownName(); known != "" && CheckName(known) == nil {
		return known, installedVersion(filepath.Join(in.layout.Tools, known))
	}
	if o.kind == KindFolder {
		// A folder's name can be read before it is copied.
		if n, err := in.pickName(o, o.location); err == nil {
			label = n
		}
	}
	return label, ""
}

// fetchContent puts the tool's files under work: a folder copied, an archive downloaded
// (when remote), verified and unpacked. It returns the folder that holds them, or the
// stage that failed. The archive's checksum goes into rec.
func (in *Installer) fetchContent(ctx context.Context, o origin, label, work string, rec *Record) (string, Stage, error) {
	content := filepath.Join(work, "content")
	if o.kind == KindFolder {
		if holdsTools(o.location, in.layout.Tools) {
			return "", StageCopy, fmt.Errorf("%s holds the tools folder %s; install the tool's own folder", o.location, in.layout.Tools)
		}
		in.progress(Event{Tool: label, Stage: StageCopy, Message: "copying " + o.location})
		if err := copyFolder(o.location, content, in.limits); err != nil {
			return "", StageCopy, err
		}
		return content, "", nil
	}
	archive := o.location
	if o.remote() {
		archive = filepath.Join(work, "download")
		if err := in.download(ctx, label, o.location, archive); err != nil {
			return "", StageDownload, err
		}
	} else if _, err := os.Stat(archive); err != nil {
		return "", StageDownload, fmt.Errorf("archive %s: %w", archive, err)
	}
	sum, verified, err := in.verify(ctx, label, o, archive)
	if err != nil {
		// A checksum that does not match fails verification; one that could not be read
		// is a download failure.
		var ve verifyError
		if errors.As(err, &ve) {
			return "", StageVerify, err
		}
		return "", StageDownload, err
	}
	rec.SHA256, rec.Verified = sum, verified
	in.progress(Event{Tool: label, Stage: StageUnpack, Message: "unpacking"})
	root, err := unpackArchive(archive, content, in.limits)
	if err != nil {
		return "", StageUnpack, err
	}
	return root, "", nil
}

// swapInstall moves content into a staging folder beside the tool's, checks that it loads,
// and swaps it in; the caller holds the name's lock. A failure leaves the installed version.
func (in *Installer) swapInstall(ctx context.Context, o origin, name, content string, rec Record) (*Result, error) {
	dst := filepath.Join(in.layout.Tools, name)
	staging, previous := dst+".staging", dst+".previous"
	for _, note := range recoverLeftovers(dst, staging, previous) {
		in.progress(Event{Tool: name, Stage: StageResolve, Message: note, Note: true})
	}
	kept := installedVersion(dst)
	fail := func(stage Stage, err error) (*Result, error) {
		return nil, &Error{Tool: name, Source: o.spec, Stage: stage, Kept: kept, Err: err}
	}
	if err := os.Rename(content, staging); err != nil {
		return fail(StageUnpack, fmt.Errorf("move into %s: %w", staging, err))
	}
	// Whatever happens from here, a staging folder does not outlive this install.
	defer fsutil.RemoveTree(staging)
	if err := writeRecord(staging, rec); err != nil {
		return fail(StageUnpack, fmt.Errorf("write %s: %w", RecordFile, err))
	}

	entry, stage, err := in.validate(ctx, name, staging)
	if err != nil {
		return fail(stage, err)
	}
	if other := in.definedElsewhere(name, entry.Name); other != "" {
		return fail(StageLoad, fmt.Errorf("the tool calls itself %q, and the installed folder %s already defines that name; two folders with one tool name break each other: install over it with --name %s, or remove it first", entry.Name, other, other))
	}
	// The record learns the tool's own name now that it is known; staging is not live yet.
	rec.ToolName = entry.Name
	if err := writeRecord(staging, rec); err != nil {
		return fail(StageSwap, fmt.Errorf("write %s: %w", RecordFile, err))
	}

	in.progress(Event{Tool: name, Stage: StageSwap, Message: "swapping in"})
	if err := swapIn(staging, dst, previous); err != nil {
		return fail(StageSwap, err)
	}
	res := &Result{
		Name: name, ToolName: entry.Name, Version: entry.Version, Folder: dst,
		Source: o.spec, Kind: o.kind, SHA256: rec.SHA256, Verified: rec.Verified,
		Replaced: kept, Entry: entry,
	}
	res.Entry.Folder = dst
	var indexVars []EnvVar
	if o.entry != nil {
		indexVars = o.entry.EnvVars
	}
	res.Env = in.envReport(entry.Env, indexVars)
	return res, nil
}

// definedElsewhere returns another installed folder whose install record names the same
// tool. Folders made by hand have no record and are not seen; the host reports such a clash
// when it loads them.
func (in *Installer) definedElsewhere(folder, toolName string) string {
	names, err := in.Installed()
	if err != nil || toolName == "" {
		return ""
	}
	for _, n := range names {
		if n == folder {
			continue
		}
		if rec, err := ReadRecord(filepath.Join(in.layout.Tools, n)); err == nil && rec != nil && rec.ToolName == toolName {
			return n
		}
	}
	return ""
}

// holdsTools reports whether the folder src is the tools folder or holds it, links
// resolved: copying it would copy the install into itself.
func holdsTools(src, tools string) bool {
	if r, err := filepath.EvalSymlinks(src); err == nil {
		src = r
	}
	if r, err := filepath.EvalSymlinks(tools); err == nil {
		tools = r
	}
	return within(src, tools)
}

// installedVersion names the version installed at dst: its semantic version,
// "unversioned", or "" when nothing is installed there.
func installedVersion(dst string) string {
	if _, err := os.Stat(dst); err != nil {
		return ""
	}
	if v := loader.Inspect(dst).Version; v != "" {
		return v
	}
	return "unversioned"
}

// download fetches an archive to a file, reporting bytes at most every 100 ms.
func (in *Installer) download(ctx context.Context, label, rawURL, file string) error {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	var last time.Time
	_, err = in.fetch(ctx, rawURL, f, fetchOptions{limit: in.limits.MaxDownload, what: "archive", progress: func(done, total int64) {
		if done == 0 || done == total || time.Since(last) >= 100*time.Millisecond {
			last = time.Now()
			in.progress(Event{Tool: label, Stage: StageDownload, Message: "downloading " + redact(rawURL), Done: done, Total: total})
		}
	}})
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return err
}

func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return raw
}

// verifyError marks a checksum that does not match or cannot be read.
type verifyError struct{ error }

// verify checks the archive against the index's sha256, else against a .sha256 file beside
// it. It returns the archive's digest and what it was checked against ("" for nothing).
func (in *Installer) verify(ctx context.Context, label string, o origin, archive string) (string, string, error) {
	got, err := fileSHA256(archive)
	if err != nil {
		return "", "", verifyError{err}
	}
	want, from := "", ""
	if o.entry != nil && o.entry.SHA256 != "" {
		want, from = o.entry.SHA256, "index"
	} else {
		sidecar := o.location + ".sha256"
		var data []byte
		if o.remote() {
			data, err = in.fetchSmall(ctx, sidecar, ".sha256 file", 64<<10)
			if isAbsent(err) {
				err = fs.ErrNotExist
			}
		} else {
			data, err = fsutil.ReadLimited(sidecar, 64<<10)
		}
		switch {
		case errors.Is(err, fs.ErrNotExist):
			in.progress(Event{Tool: label, Stage: StageVerify, Note: true,
				Message: fmt.Sprintf("nothing was verified: no sha256 in the index and no %s beside the archive (sha256 %s)", redact(sidecar), got)})
			return got, "", nil
		case err != nil:
			return "", "", fmt.Errorf("read %s: %w", redact(sidecar), err)
		}
		if want, err = parseSumFile(data); err != nil {
			return "", "", verifyError{fmt.Errorf("%s: %w", redact(sidecar), err)}
		}
		from = redact(sidecar)
	}
	if !strings.EqualFold(want, got) {
		return "", "", verifyError{fmt.Errorf("sha256 mismatch: %s gives %s, the archive's is %s; the archive is not the one published (refused)", from, strings.ToLower(want), got)}
	}
	in.progress(Event{Tool: label, Stage: StageVerify, Message: fmt.Sprintf("sha256 %s verified against %s", got, from), Note: true})
	return got, from, nil
}

// parseSumFile reads a .sha256 file: the hex digest, optionally followed by a file name as
// sha256sum writes it ("<hex>  name" or "<hex> *name").
func parseSumFile(data []byte) (string, error) {
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return "", errors.New("the .sha256 file is empty")
	}
	if !sha256Pattern.MatchString(fields[0]) {
		return "", fmt.Errorf("the .sha256 file does not start with a sha256 digest (64 hex digits), found %q", truncate(fields[0], 80))
	}
	return strings.ToLower(fields[0]), nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

var (
	// namePattern is a folder name that works on every system and in a URL.
	namePattern    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)
	versionSuffix  = regexp.MustCompile(`-v?\d+\.\d+\.\d+([-+][0-9A-Za-z.+-]*)?$`)
	archiveSuffixe = regexp.MustCompile(`(?i)(\.tar\.gz|\.tgz|\.tar|\.zip)$`)
)

// CheckName refuses a tool name that cannot be a folder of its own under the tools folder.
func CheckName(name string) error {
	if !namePattern.MatchString(name) || !loader.IsToolFolderName(name) || strings.Contains(name, "..") {
		return fmt.Errorf("%q cannot be a tool folder name: use letters, digits, '.', '-' and '_' (at most 100), start with a letter or digit, and do not end in .staging or .previous", name)
	}
	return nil
}

// pickName chooses the folder name: the one asked for, else the index entry's, else
// package.json "name" without a scope or "tool-" prefix, else the archive's or folder's
// base name without extension or version.
func (in *Installer) pickName(o origin, content string) (string, error) {
	if o.name != "" {
		return o.name, CheckName(o.name)
	}
	if o.entry != nil {
		return o.entry.Name, CheckName(o.entry.Name)
	}
	var tried []string
	if n := packageName(content); n != "" {
		if CheckName(n) == nil {
			return n, nil
		}
		tried = append(tried, fmt.Sprintf("package.json name %q", n))
	}
	base := o.location
	if u, err := url.Parse(o.location); err == nil && isURL(o.location) {
		base = path.Base(u.Path)
	} else {
		base = filepath.Base(base)
	}
	if o.kind != KindFolder {
		base = archiveSuffixe.ReplaceAllString(base, "")
		if _, err := ParseVersion(base); err == nil || base == "latest" {
			// {name}/{version}.tar.gz, the index's own layout: the folder names the tool.
			parent := filepath.Base(filepath.Dir(o.location))
			if u, err := url.Parse(o.location); err == nil && isURL(o.location) {
				parent = path.Base(path.Dir(u.Path))
			}
			base = parent
		}
		base = versionSuffix.ReplaceAllString(base, "")
	}
	if CheckName(base) == nil {
		return base, nil
	}
	tried = append(tried, fmt.Sprintf("base name %q", base))
	return "", fmt.Errorf("found no usable tool name (tried %s): give one with --name", strings.Join(tried, ", "))
}

func packageName(dir string) string {
	data, err := fsutil.ReadLimited(filepath.Join(dir, "package.json"), 1<<20)
	if err != nil {
		return ""
	}
	var pkg struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(data, &pkg) != nil {
		return ""
	}
	n := pkg.Name
	if strings.HasPrefix(n, "@") {
		if _, rest, ok := strings.Cut(n, "/"); ok {
			n = rest
		}
	}
	n = strings.TrimPrefix(n, "jean2-tool-")
	return strings.TrimPrefix(n, "tool-")
}

// recoverLeftovers cleans up after an install that was interrupted: a staging folder is
// always stale (it never outlives a finished install); a .previous folder is the old
// version, put back when the swap stopped halfway and deleted otherwise.
func recoverLeftovers(dst, staging, previous string) []string {
	var notes []string
	if _, err := os.Lstat(staging); err == nil {
		if err := os.RemoveAll(staging); err != nil {
			notes = append(notes, fmt.Sprintf("could not remove the leftover %s: %v", staging, err))
		} else {
			notes = append(notes, "removed "+filepath.Base(staging)+" left by an interrupted install")
		}
	}
	if _, err := os.Lstat(previous); err == nil {
		if _, err := os.Lstat(dst); errors.Is(err, fs.ErrNotExist) {
			if err := os.Rename(previous, dst); err == nil {
				notes = append(notes, "put back "+filepath.Base(dst)+" from "+filepath.Base(previous)+" (an interrupted install had moved it aside)")
				return notes
			}
		}
		if err := os.RemoveAll(previous); err == nil {
			notes = append(notes, "removed "+filepath.Base(previous)+" left by an interrupted install")
		}
	}
	return notes
}

// swapIn puts staging at dst. The old folder, when there is one, goes to previous and is
// deleted only once the new one is in place; if the new one cannot be put in place, the old
// one is put back.
func swapIn(staging, dst, previous string) error {
	if _, err := os.Lstat(dst); errors.Is(err, fs.ErrNotExist) {
		return os.Rename(staging, dst)
	}
	ok, err := exchange(staging, dst)
	if err != nil {
		return fmt.Errorf("exchange %s and %s: %w", staging, dst, err)
	}
	if ok {
		// The new version is live; staging holds the old one.
		if err := os.Rename(staging, previous); err != nil {
			return os.RemoveAll(staging)
		}
		_ = os.RemoveAll(previous)
		return nil
	}
	return swapTwoStep(staging, dst, previous)
}

func swapTwoStep(staging, dst, previous string) error {
	if err := os.Rename(dst, previous); err != nil {
		return fmt.Errorf("move the installed version aside: %w", err)
	}
	if err := os.Rename(staging, dst); err != nil {
		if rerr := os.Rename(previous, dst); rerr != nil {
			return fmt.Errorf("move the new version into place: %w; putting the old one back failed too (%v): it is at %s, and the next install of this tool puts it back", err, rerr, previous)
		}
		return fmt.Errorf("move the new version into place: %w (the old one is back)", err)
	}
	_ = os.RemoveAll(previous)
	return nil
}

// validate prepares (dependencies, bundle) when a Preparer is set, then test-loads the
// staged folder in a worker through the Validator.
func (in *Installer) validate(ctx context.Context, name, staging string) (host.Entry, Stage, error) {
	if in.validator == nil {
		return host.Entry{}, StageLoad, errors.New("no validator: the installer cannot test-load tools")
	}
	if in.prepare != nil {
		err := in.prepare.Prepare(ctx, staging, func(stage Stage, msg string) {
			in.progress(Event{Tool: name, Stage: stage, Message: msg})
		})
		if err != nil {
			return host.Entry{}, stageOf(err), trimmedError{msg: trimLoaderPrefix(filepath.Base(staging), err.Error()), err: err}
		}
	}
	in.progress(Event{Tool: name, Stage: StageLoad, Message: "loading"})
	e := in.validator.Validate(ctx, staging)
	if e.Status != host.StatusOK {
		msg := e.Error
		if msg == "" {
			msg = "the tool did not load (no reason given)"
		}
		stage := stageOfEntryError(filepath.Base(staging), msg)
		msg = trimLoaderPrefix(filepath.Base(staging), msg)
		if err := ctx.Err(); err != nil {
			return e, stage, fmt.Errorf("%s: %w", msg, context.Cause(ctx))
		}
		return e, stage, errors.New(msg)
	}
	return e, "", nil
}

// trimmedError is a loader error without its "<folder>: <stage>: " prefix, which the
// install error already says in its own words.
type trimmedError struct {
	msg string
	err error
}

func (e trimmedError) Error() string { return e.msg }
func (e trimmedError) Unwrap() error { return e.err }

func trimLoaderPrefix(folder, msg string) string {
	rest, ok := strings.CutPrefix(msg, folder+": ")
	if !ok {
		return msg
	}
	for _, stage := range []string{loader.StageDiscover, loader.StageInstall, loader.StageBundle, loader.StageCache} {
		if r, ok := strings.CutPrefix(rest, stage+": "); ok {
			return r
		}
	}
	return msg
}

// stageOf maps a loader error to the install stage it belongs to.
func stageOf(err error) Stage {
	var le *loader.Error
	if errors.As(err, &le) {
		switch le.Stage {
		case loader.StageInstall:
			return StageInstallDeps
		case loader.StageBundle, loader.StageCache:
			return StageBundle
		case loader.StageDiscover:
			return StageCheck
		}
	}
	return StageLoad
}

// stageOfEntryError reads the stage from a host entry's error, which is a loader error
// ("<folder>: <stage>: …") when loading stopped before the worker.
func stageOfEntryError(folder, msg string) Stage {
	rest, ok := strings.CutPrefix(msg, folder+": ")
	if !ok {
		return StageLoad
	}
	switch {
	case strings.HasPrefix(rest, loader.StageInstall+": "):
		return StageInstallDeps
	case strings.HasPrefix(rest, loader.StageBundle+": "), strings.HasPrefix(rest, loader.StageCache+": "):
		return StageBundle
	case strings.HasPrefix(rest, loader.StageDiscover+": "):
		return StageCheck
	}
	return StageLoad
}

// envReport merges the variables the tool declares (with the host's set/missing) and those
// the index names (required, sensitive): required first, then by name.
func (in *Installer) envReport(declared []host.EnvStatus, indexVars []EnvVar) []EnvReport {
	byName := map[string]*EnvReport{}
	var out []*EnvReport
	for _, d := range declared {
		r := &EnvReport{Name: d.Name, Set: d.Set, Withheld: d.Withheld}
		byName[d.Name] = r
		out = append(out, r)
	}
	var unknown []string
	for _, v := range indexVars {
		if r, ok := byName[v.Name]; ok {
			r.Required, r.Sensitive = v.Required, v.Sensitive
			continue
		}
		r := &EnvReport{Name: v.Name, Required: v.Required, Sensitive: v.Sensitive}
		byName[v.Name] = r
		out = append(out, r)
		unknown = append(unknown, v.Name)
	}
	if len(unknown) > 0 {
		// Variables the index names but the tool does not declare: look where the host
		// would (.env, then the server's environment), keeping only whether each is set.
		set := policy.ToolEnv(unknown, in.dotEnv(), in.serverEnv)
		for _, n := range unknown {
			_, ok := set[n]
			byName[n].Set = ok
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Required != out[j].Required {
			return out[i].Required
		}
		return out[i].Name < out[j].Name
	})
	res := make([]EnvReport, len(out))
	for i, r := range out {
		res[i] = *r
	}
	return res
}

func (in *Installer) dotEnv() map[string]string {
	f, err := os.Open(in.layout.DotEnv)
	if err != nil {
		return nil
	}
	defer f.Close()
	vals, err := policy.ParseDotEnv(f)
	if err != nil {
		return nil
	}
	return vals
}

// sweepScratch removes scratch folders of installs that died more than an hour ago.
func (in *Installer) sweepScratch() {
	entries, err := os.ReadDir(in.layout.Tools)
	if err != nil {
		return
	}
	for _, e := range entries {
		n := e.Name()
		if !e.IsDir() || !(strings.HasPrefix(n, ".install-") || strings.HasPrefix(n, ".remove-")) {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > time.Hour {
			_ = os.RemoveAll(filepath.Join(in.layout.Tools, n))
		}
	}
}

package mcpclient

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"

	"github.com/jean2/jean2/internal/fsutil"
)

// A workspace's .jean2/mcp.json names commands jean2 starts outside any sandbox, and it
// comes with whatever folder the workspace is: a repository nobody checked, or a file a
// tool wrote. So its servers start only once a person trusted that file's exact content
// (its SHA-256); a changed file asks again. The trust lives in $JEAN2_HOME (which workers
// cannot reach), keyed by the workspace's real path.

// TrustFile is the name of the trust store in $JEAN2_HOME.
const TrustFile = "trusted-workspaces.json"

// maxWorkspaceFile bounds the read of a workspace's mcp.json.
const maxWorkspaceFile = 1 << 20

// WorkspaceFile is a workspace's .jean2/mcp.json as read once: its bytes are what is hashed,
// shown and started, so a file changed between the check and the start is not started.
type WorkspaceFile struct {
	Workspace string // the workspace's real path
	Path      string // the file
	Present   bool
	SHA256    string         // hex, of Data; "" when not present
	Data      []byte         // nil when not present or unreadable
	Servers   []ServerConfig // what it lists (enabled only); nil when it cannot be used
	Err       error          // why it cannot be read or used (*FileError)
}

// UnderSandbox is wf as a host whose sandbox mode is mode would run it: with the mode off,
// each server is described as unconfined, so a person trusts what will really run.
func (wf WorkspaceFile) UnderSandbox(off bool) WorkspaceFile {
	if !off {
		return wf
	}
	servers := slices.Clone(wf.Servers)
	for i := range servers {
		servers[i].HostUnconfined = "jean2's sandbox mode is off"
	}
	wf.Servers = servers
	return wf
}

// WorkspaceConfigPath is where a workspace lists its MCP servers.
func WorkspaceConfigPath(workspace string) string {
	return filepath.Join(workspace, ".jean2", "mcp.json")
}

// ReadWorkspaceFile reads a workspace's .jean2/mcp.json once. A file that cannot be read or
// parsed is Present with Err set; its SHA-256 is of the bytes read, or of the error.
func ReadWorkspaceFile(workspace string) WorkspaceFile {
	real, err := filepath.EvalSymlinks(workspace)
	if err != nil {
		real = filepath.Clean(workspace)
	}
	wf := WorkspaceFile{Workspace: real, Path: WorkspaceConfigPath(workspace)}
	// Not blocking: a FIFO there must not hang the reader (serve's watcher) forever.
	f, err := os.OpenFile(wf.Path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return wf
	}
	wf.Present = true
	if err == nil {
		defer f.Close()
		var fi os.FileInfo
		if fi, err = f.Stat(); err == nil && !fi.Mode().IsRegular() {
			err = fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
		}
	}
	if err == nil {
		wf.Data, err = io.ReadAll(io.LimitReader(f, maxWorkspaceFile+1))
		if err == nil && len(wf.Data) > maxWorkspaceFile {
			err = fmt.Errorf("larger than %d bytes", maxWorkspaceFile)
		}
	}
	if err != nil {
		sum := sha256.Sum256([]byte(err.Error()))
		wf.SHA256, wf.Data, wf.Err = hex.EncodeToString(sum[:]), nil, &FileError{File: wf.Path, Err: err}
		return wf
	}
	sum := sha256.Sum256(wf.Data)
	wf.SHA256 = hex.EncodeToString(sum[:])
	if wf.Servers, err = Parse(wf.Path, wf.Data); err == nil {
		err = wf.own()
	}
	if err != nil {
		wf.Servers, wf.Err = nil, &FileError{File: wf.Path, Err: err}
	}
	return wf
}

// own marks the file's servers as the workspace's (confined to it, whatever they say) and
// refuses a server that asks to run unconfined: only the user's own mcp.json may.
func (wf WorkspaceFile) own() error {
	for i := range wf.Servers {
		s := &wf.Servers[i]
		if s.Sandbox != nil && !*s.Sandbox {
			return fmt.Errorf(`mcpServers.%s: "sandbox": false is allowed only in $JEAN2_HOME/mcp.json; a workspace's servers always run confined`, s.Name)
		}
		s.Workspace = wf.Workspace
	}
	return nil
}

// Config is what the file lists, with the error that kept it from being used.
func (wf WorkspaceFile) Config() (Config, error) {
	return Config{Servers: wf.Servers}, wf.Err
}

// Commands describes what each server of the file starts or reaches, for a person to
// judge: "name: command arg…" for a stdio server, "name: url" for a remote one.
func (wf WorkspaceFile) Commands() []string {
	out := make([]string, 0, len(wf.Servers))
	for _, s := range wf.Servers {
		out = append(out, shown(s.Name)+": "+s.Describe())
	}
	return out
}

// Describe says what a server starts (command, args, cwd, env names) or reaches (url).
// A person trusts what it shows, in the terminal, the web client and the log: every string
// of the file that holds a character that is not printable text (a carriage return, an
// escape sequence, a bidi override) is shown quoted with that character escaped, so none
// can erase, hide or reorder what runs (TestAttackTrustPromptDisguisedCommand).
func (s ServerConfig) Describe() string {
	if s.Command == "" {
		return shown(s.URL)
	}
	parts := []string{shown(s.Command)}
	for _, a := range s.Args {
		if q := shown(a); q != a {
			parts = append(parts, q)
		} else {
			parts = append(parts, quoteArg(a))
		}
	}
	d := strings.Join(parts, " ")
	if s.Cwd != "" {
		d += " (in " + shown(s.Cwd) + ")"
	}
	if len(s.Env) > 0 {
		names := make([]string, 0, len(s.Env))
		for n := range s.Env {
			names = append(names, shown(n))
		}
		sort.Strings(names)
		d += " (env " + strings.Join(names, ", ") + ")"
	}
	return d + " — " + s.Abilities()
}

// Abilities says what a stdio server will be able to do once started, for the trust
// prompt and the servers list: where it writes, what it reaches, that it is confined.
func (s ServerConfig) Abilities() string {
	if s.HostUnconfined != "" {
		return "UNCONFINED (" + s.HostUnconfined + "): runs as you, with everything you can read, write and reach"
	}
	if !s.Confined() {
		return `UNCONFINED ("sandbox": false): runs as you, with everything you can read, write and reach`
	}
	writes := "only its own cache folder"
	switch {
	case s.Workspace != "":
		writes = "the workspace (not its .jean2) and its own cache folder"
	case s.Cwd != "":
		writes = shown(s.Cwd) + " and its own cache folder"
	}
	reach := "no network"
	if r := s.Reach(); len(r) > 0 {
		parts := make([]string, len(r))
		for i, e := range r {
			parts[i] = shown(e)
			if slices.Contains(s.Implied(), e) && !slices.Contains(s.Network, e) {
				parts[i] += " (" + filepath.Base(s.Command) + "'s registry)"
			}
		}
		reach = "network only to " + strings.Join(parts, ", ")
	}
	return "confined: writes " + writes + "; " + reach + "; no jean2 home, credentials or keys"
}

// shown is s as it may be shown to a person: as it is when it is printable text, else
// quoted with Go's escapes (\r, \x1b, \u202e).
func shown(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool { return r != ' ' && !unicode.IsPrint(r) }) {
		return strconv.Quote(s)
	}
	return s
}

func quoteArg(a string) string {
	if a != "" && !strings.ContainsAny(a, " \t\n'\"\\$`;&|<>(){}*?!#~") {
		return a
	}
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}

// Trust is the store of trusted workspace files, $JEAN2_HOME/trusted-workspaces.json. It is
// read again on every question, so a trust given by another jean2 (`jean2 mcp trust`
// beside a running serve) counts at once.
type Trust struct {
	path string
	mu   sync.Mutex // orders this process's read-modify-writes
}

// NewTrust returns the trust store of the jean2 home.
func NewTrust(home string) *Trust { return &Trust{path: filepath.Join(home, TrustFile)} }

// Path is the store's file.
func (t *Trust) Path() string { return t.path }

type trustEntry struct {
	SHA256    string    `json:"sha256"`
	TrustedAt time.Time `json:"trustedAt"`
	Commands  []string  `json:"commands,omitempty"` // what the person was shown, for the record
}

type trustDoc struct {
	Workspaces map[string]trustEntry `json:"workspaces"`
}

func (t *Trust) read() (trustDoc, error) {
	doc := trustDoc{Workspaces: map[string]trustEntry{}}
	data, err := fsutil.ReadLimited(t.path, 16<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return doc, nil
	}
	if err != nil {
		return doc, fmt.Errorf("read %s: %w", t.path, err)
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return doc, fmt.Errorf("read %s: %w", t.path, err)
	}
	if doc.Workspaces == nil {
		doc.Workspaces = map[string]trustEntry{}
	}
	return doc, nil
}

// Trusted reports whether a person trusted the file's current content. A file with nothing
// to start (absent) needs no trust.
func (t *Trust) Trusted(wf WorkspaceFile) (bool, error) {
	if !wf.Present {
		return true, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	doc, err := t.read()
	if err != nil {
		return false, err
	}
	e, ok := doc.Workspaces[wf.Workspace]
	return ok && e.SHA256 == wf.SHA256, nil
}

// Set records that a person trusted the file's content (it replaces what the workspace had).
func (t *Trust) Set(wf WorkspaceFile) error {
	if !wf.Present || wf.SHA256 == "" {
		return fmt.Errorf("%s: there is no file to trust", wf.Path)
	}
	return t.update(func(doc *trustDoc) {
		doc.Workspaces[wf.Workspace] = trustEntry{SHA256: wf.SHA256, TrustedAt: time.Now().UTC(), Commands: wf.Commands()}
	})
}

// Revoke forgets the workspace's trust.
func (t *Trust) Revoke(workspace string) error {
	real, err := filepath.EvalSymlinks(workspace)
	if err != nil {
		real = filepath.Clean(workspace)
	}
	return t.update(func(doc *trustDoc) { delete(doc.Workspaces, real) })
}

func (t *Trust) update(change func(*trustDoc)) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(t.path), 0o700); err != nil {
		return err
	}
	unlock, err := fsutil.LockFile(context.Background(), t.path+".lock", nil)
	if err != nil {
		return fmt.Errorf("lock %s: %w", t.path, err)
	}
	defer unlock()
	doc, err := t.read()
	if err != nil {
		return err
	}
	change(&doc)
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if err := fsutil.WriteFileAtomicPerm(t.path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", t.path, err)
	}
	return nil
}

// UntrustedError is a workspace's mcp.json whose content no person trusted: its servers
// are not started.
type UntrustedError struct {
	File WorkspaceFile
}

func (e *UntrustedError) Error() string {
	what := "servers"
	if c := e.File.Commands(); len(c) > 0 {
		what = strings.Join(c, "; ")
	}
	return fmt.Sprintf("%s is not trusted (it changed, or no one trusted it yet), so its MCP servers are not started: it wants to start %s. Trust it with `jean2 mcp trust --workspace %s` or in the web client",
		e.File.Path, what, e.File.Workspace)
}

package install

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
)

// greetTool is a tool whose answer names its version, so a test can tell which version
// serves.
func greetTool(version string) map[string]string { return namedTool("greet", version) }

// namedTool is greetTool under another name (two folders may not define one tool name).
func namedTool(name, version string) map[string]string {
	return map[string]string{
		"package.json": fmt.Sprintf(`{"name": "@jean2/tool-%s", "version": %q, "type": "module", "dependencies": {"@jean2/sdk": "^0.9.0"}}`, name, version),
		"tool.ts": fmt.Sprintf(`import type { ToolDefinition } from '@jean2/sdk';
export const definition: ToolDefinition = { name: %q, description: 'says hello', inputSchema: { type: 'object', properties: { who: { type: 'string' } } } };
export async function execute(input: { who?: string }) {
  return { success: true, result: { greeting: 'hello ' + (input.who ?? 'world'), version: %q } };
}
`, name, version),
	}
}

func writeTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// entry is one archive member for the archive builders.
type entry struct {
	name     string
	body     string
	typeflag byte // tar type; 0 means a regular file
	link     string
	mode     int64
}

func files(prefix string, m map[string]string) []entry {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []entry
	for _, n := range names {
		out = append(out, entry{name: prefix + n, body: m[n]})
	}
	return out
}

func tarGz(t testing.TB, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typeflag, Linkname: e.link, Mode: e.mode, ModTime: time.Unix(1700000000, 0), Format: tar.FormatPAX}
		if h.Typeflag == tar.TypeXGlobalHeader {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeXGlobalHeader, PAXRecords: map[string]string{"comment": "git archive"}}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zipFile(t testing.TB, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		switch e.typeflag {
		case tar.TypeSymlink:
			h.SetMode(fs.ModeSymlink | 0o777)
			e.body = e.link
		case tar.TypeDir:
			h.SetMode(fs.ModeDir | 0o755)
		default:
			h.SetMode(0o644)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// env is a jean2 home in a temporary folder with a real host and an installer over it.
type env struct {
	t       *testing.T
	layout  host.Layout
	host    *host.Host
	in      *Installer
	events  *eventLog
	scratch string
}

type eventLog struct {
	mu     sync.Mutex
	events []Event
}

func (l *eventLog) add(e Event) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

func (l *eventLog) all() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Event(nil), l.events...)
}

func (l *eventLog) text() string {
	var b strings.Builder
	for _, e := range l.all() {
		fmt.Fprintf(&b, "%s %s: %s (%d/%d)\n", e.Tool, e.Stage, e.Message, e.Done, e.Total)
	}
	return b.String()
}

func (l *eventLog) reset() {
	l.mu.Lock()
	l.events = nil
	l.mu.Unlock()
}

type envOptions struct {
	index     string
	limits    Limits
	serverEnv []string
}

func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	root := t.TempDir()
	layout, err := host.LayoutFromEnv(func(k string) string {
		if k == "JEAN2_HOME" {
			return filepath.Join(root, "home")
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	h, err := host.New(ctx, host.Options{Layout: layout, ServerEnv: o.serverEnv, MaxWorkers: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h.Close(cctx)
	})
	e := &env{t: t, layout: layout, host: h, events: &eventLog{}, scratch: filepath.Join(root, "scratch")}
	if err := os.MkdirAll(e.scratch, 0o755); err != nil {
		t.Fatal(err)
	}
	serverEnv := o.serverEnv
	if serverEnv == nil {
		serverEnv = []string{}
	}
	e.in, err = New(Options{
		Layout: layout, Validator: h, Prepare: NewLoaderPreparer(layout, RuntimeOptions{}, nil),
		IndexLocation: o.index, Limits: o.limits, Progress: e.events.add, ServerEnv: serverEnv,
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// file writes data into the scratch folder and returns its path.
func (e *env) file(name string, data []byte) string {
	e.t.Helper()
	p := filepath.Join(e.scratch, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) folder(name string, files map[string]string) string {
	e.t.Helper()
	dir := filepath.Join(e.scratch, name)
	writeTree(e.t, dir, files)
	return dir
}

func (e *env) mustInstall(spec string, opt InstallOptions) *Result {
	e.t.Helper()
	res, err := e.in.Install(context.Background(), spec, opt)
	if err != nil {
		e.t.Fatalf("install %s: %v\nprogress:\n%s", spec, err, e.events.text())
	}
	return res
}

// call reloads the live host and calls greet, returning the version that answered.
func (e *env) servingVersion(tool string) string {
	e.t.Helper()
	ctx := context.Background()
	if err := e.host.Reload(ctx); err != nil {
		e.t.Fatal(err)
	}
	ws := e.t.TempDir()
	out := e.host.Invoke(ctx, host.Call{Tool: tool, Args: json.RawMessage(`{"who":"test"}`), SessionID: "s1", Workspace: host.Workspace{Path: ws}})
	if !out.Result.Success {
		e.t.Fatalf("call %s: %s", tool, out.Result.Error)
	}
	var r struct {
		Greeting string `json:"greeting"`
		Version  string `json:"version"`
	}
	raw, _ := json.Marshal(out.Result.Result)
	if err := json.Unmarshal(raw, &r); err != nil || r.Greeting != "hello test" {
		e.t.Fatalf("call %s: %s (%v)", tool, raw, err)
	}
	return r.Version
}

// toolsListing is the tools folder's names, to see that nothing is left behind.
func (e *env) toolsListing() []string {
	e.t.Helper()
	entries, err := os.ReadDir(e.layout.Tools)
	if err != nil {
		e.t.Fatal(err)
	}
	var names []string
	for _, d := range entries {
		names = append(names, d.Name())
	}
	return names
}

// server is a local HTTP server (127.0.0.1) serving files from a map, with hooks.
type server struct {
	*httptest.Server
	mu       sync.Mutex
	files    map[string][]byte
	handlers map[string]http.HandlerFunc
	hits     map[string]int
}

func newServer(t *testing.T) *server {
	s := &server{files: map[string][]byte{}, handlers: map[string]http.HandlerFunc{}, hits: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		h, hasHandler := s.handlers[r.URL.Path]
		data, ok := s.files[r.URL.Path]
		s.mu.Unlock()
		switch {
		case hasHandler:
			h(w, r)
		case ok:
			w.Header().Set("Content-Length", fmt.Sprint(len(data)))
			_, _ = w.Write(data)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) put(path string, data []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[path] = data
	return s.URL + path
}

func (s *server) handle(path string, h http.HandlerFunc) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers[path] = h
	return s.URL + path
}

func (s *server) hitCount(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

func indexJSON(t testing.TB, baseURL string, tools ...IndexTool) []byte {
	t.Helper()
	data, err := json.Marshal(map[string]any{"version": 3, "registry": map[string]any{"baseUrl": baseURL, "urlTemplate": "{baseUrl}/{name}/{version}.tar.gz"}, "tools": tools})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func installError(t *testing.T, err error) *Error {
	t.Helper()
	if err == nil {
		t.Fatal("install succeeded; want an error")
	}
	var ie *Error
	if !errors.As(err, &ie) {
		t.Fatalf("error %T %v is not an *install.Error", err, err)
	}
	return ie
}

package gotool

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	jean2 "github.com/jean2/jean2"
	"github.com/jean2/jean2/internal/fsutil"
)

// sdkModulePath is the module a tool folder requires for the SDK.
const sdkModulePath = "github.com/jean2/jean2"

// Limits on what is hashed: a tool folder is source, not a data set.
const (
	maxFolderFiles = 5000
	maxFolderBytes = 256 << 20
	maxOutput      = 64 << 10 // of the go command's output kept in a BuildError
)

// BuildOptions say what to build and where.
type BuildOptions struct {
	Folder    string // the tool folder (tool.go and go.mod)
	CacheDir  string // binaries go to <CacheDir>/gotools/<hash>/tool
	SDKModule string // the SDK module written by jean2.WriteSDKModule
	// Env is the server's environment. Only the variables the go command needs to reach a
	// module proxy are taken from it (GOPROXY, GOPRIVATE, proxies, CA files, PATH, HOME…;
	// see BuildEnv); provider keys and the rest never reach a build.
	Env []string
	// Progress, when set, receives a line when a build starts and when it ends.
	Progress func(string)
}

// Binary is a built tool.
type Binary struct {
	Path      string // the executable
	Hash      string // content hash of the folder, the Go version and the SDK
	GoVersion string
	Cached    bool          // found in the cache: no build ran
	Duration  time.Duration // the build's time (hashing and the lock included)
}

// BuildError is a tool folder that did not build. File is relative to the folder; Line and
// Column are 0 when the go command named no position. Output is what the go command
// printed (cut to 64 KiB).
type BuildError struct {
	Folder string
	File   string
	Line   int
	Column int
	Msg    string
	Output string
}

func (e *BuildError) Error() string {
	var b strings.Builder
	b.WriteString(filepath.Base(e.Folder) + ": build: ")
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteString(":" + strconv.Itoa(e.Line))
			if e.Column > 0 {
				b.WriteString(":" + strconv.Itoa(e.Column))
			}
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Build builds the tool folder, or finds it built: the binary's name is the content hash of
// every file of the folder (hidden ones and the cache excepted), the Go version and the
// SDK, so an unchanged folder is never built twice. Builds of the same hash, in this process
// or another, wait for one another and build once. A folder that does not compile fails
// with a *BuildError.
func Build(ctx context.Context, tc Toolchain, opts BuildOptions) (Binary, error) {
	start := time.Now()
	if opts.Folder == "" || opts.CacheDir == "" || opts.SDKModule == "" {
		return Binary{}, errors.New("go build: Folder, CacheDir and SDKModule are all needed")
	}
	if tc.Go == "" {
		return Binary{}, errors.New("go build: no Go toolchain given (use Detect)")
	}
	folder, err := filepath.Abs(opts.Folder)
	if err != nil {
		return Binary{}, fmt.Errorf("go build %s: %w", opts.Folder, err)
	}
	cacheDir, err := filepath.Abs(opts.CacheDir)
	if err != nil {
		return Binary{}, fmt.Errorf("go build %s: cache: %w", opts.Folder, err)
	}
	name := filepath.Base(folder)
	if fi, err := os.Stat(folder); err != nil || !fi.IsDir() {
		return Binary{}, fmt.Errorf("%s: not a tool folder: %s is not a directory", name, folder)
	}
	if fi, err := os.Stat(filepath.Join(folder, "go.mod")); err != nil || !fi.Mode().IsRegular() {
		return Binary{}, fmt.Errorf("%s: not a Go tool folder: there is no go.mod in %s; create one with `go mod init %s` (or start over with `jean2 tools new %s --lang go`)", name, folder, name, name)
	}
	if fi, err := os.Stat(filepath.Join(opts.SDKModule, "go.mod")); err != nil || !fi.Mode().IsRegular() {
		return Binary{}, fmt.Errorf("%s: the SDK module %s has no go.mod: write it with jean2.WriteSDKModule", name, opts.SDKModule)
	}

	hash, err := hashFolder(folder, cacheDir, tc.Version)
	if err != nil {
		return Binary{}, fmt.Errorf("%s: %w", name, err)
	}
	root := filepath.Join(cacheDir, "gotools")
	bin := Binary{Path: filepath.Join(root, hash, "tool"), Hash: hash, GoVersion: tc.Version}
	done := func(cached bool) Binary {
		bin.Cached = cached
		bin.Duration = time.Since(start)
		return bin
	}
	if isExecutable(bin.Path) {
		return done(true), nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return Binary{}, fmt.Errorf("%s: build cache: %w", name, err)
	}
	unlock, err := fsutil.LockFile(ctx, filepath.Join(root, hash+".lock"), nil)
	if err != nil {
		return Binary{}, fmt.Errorf("%s: wait for another build of the same source: %w", name, err)
	}
	defer unlock()
	if isExecutable(bin.Path) {
		return done(true), nil // built while this one waited
	}

	if opts.Progress != nil {
		opts.Progress(fmt.Sprintf("building %s with %s…", name, tc.Version))
	}
	b := &builder{tc: tc, folder: folder, name: name, sdk: opts.SDKModule, env: BuildEnv(tc, opts.Env)}
	if err := b.build(ctx, root, hash); err != nil {
		return Binary{}, err
	}
	bin = done(false)
	if opts.Progress != nil {
		opts.Progress(fmt.Sprintf("built %s in %s", name, bin.Duration.Round(10*time.Millisecond)))
	}
	return bin, nil
}

// passThrough are the server's variables a build may use: where and how to fetch modules
// (proxies, private module patterns, checksum database, CA certificates), and what the go
// command needs to find its own configuration.
var passThrough = []string{
	"HOME", "TMPDIR", "XDG_CONFIG_HOME", "GOENV",
	"GOPROXY", "GONOPROXY", "GOPRIVATE", "GOSUMDB", "GONOSUMDB", "GOINSECURE", "GOVCS", "GOAUTH", "NETRC",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "GIT_SSL_CAINFO", "GIT_SSL_CAPATH",
}

// BuildEnv is the whole environment of the go command in a build: the toolchain's
// directories, module mode, the local toolchain only, no cgo, and from server only the
// variables listed in passThrough (PATH gets the toolchain's directory in front).
func BuildEnv(tc Toolchain, server []string) []string {
	vars := map[string]string{}
	for _, kv := range server {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	path := filepath.Dir(tc.Go)
	if p := vars["PATH"]; p != "" {
		path += string(os.PathListSeparator) + p
	} else {
		path += string(os.PathListSeparator) + "/usr/local/bin:/usr/bin:/bin"
	}
	env := []string{
		"PATH=" + path,
		"GOCACHE=" + tc.GOCACHE,
		"GOMODCACHE=" + tc.GOMODCACHE,
		"GOPATH=" + tc.GOPATH,
		"GOFLAGS=-mod=mod -buildvcs=false",
		"GOTOOLCHAIN=local",
		"CGO_ENABLED=0",
		"GOWORK=off",
	}
	for _, k := range passThrough {
		if v, ok := vars[k]; ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// builder runs the go command for one build.
type builder struct {
	tc     Toolchain
	folder string
	name   string
	sdk    string
	env    []string
}

func (b *builder) build(ctx context.Context, root, hash string) error {
	scratch, err := os.MkdirTemp(root, ".build-"+hash+"-*")
	if err != nil {
		return fmt.Errorf("%s: build: %w", b.name, err)
	}
	defer os.RemoveAll(scratch)
	modfile := filepath.Join(scratch, "go.mod")
	if err := b.prepareModfile(ctx, modfile); err != nil {
		return err
	}
	out := filepath.Join(scratch, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		return fmt.Errorf("%s: build: %w", b.name, err)
	}
	if _, err := b.goCmd(ctx, "build", "-modfile="+modfile, "-mod=mod", "-trimpath", "-o", filepath.Join(out, "tool"), "."); err != nil {
		return b.buildError(err, modfile)
	}
	// go build -o succeeds for a library package too, writing an archive.
	if !isExecutable(filepath.Join(out, "tool")) {
		return &BuildError{Folder: b.folder, File: "tool.go", Line: 1, Column: 1,
			Msg: fmt.Sprintf("package %s is not a command: a Go tool folder is `package main` with a main function that calls tool.Serve", b.packageName())}
	}
	// The whole directory is renamed, so the binary appears complete or not at all.
	target := filepath.Join(root, hash)
	if err := os.Rename(out, target); err != nil {
		if isExecutable(filepath.Join(target, "tool")) {
			return nil // another builder (without a working lock) got there first
		}
		return fmt.Errorf("%s: build: store the binary: %w", b.name, err)
	}
	return nil
}

// prepareModfile writes the copy of the folder's go.mod the build uses: its go.sum merged
// with the SDK's, the SDK required when the folder does not say so, and replaced by the
// SDK module on disk.
func (b *builder) prepareModfile(ctx context.Context, modfile string) error {
	src, err := os.ReadFile(filepath.Join(b.folder, "go.mod"))
	if err != nil {
		return fmt.Errorf("%s: read go.mod: %w", b.name, err)
	}
	if err := os.WriteFile(modfile, src, 0o644); err != nil {
		return fmt.Errorf("%s: build: %w", b.name, err)
	}
	var sums []byte
	for _, p := range []string{filepath.Join(b.folder, "go.sum"), filepath.Join(b.sdk, "go.sum")} {
		data, err := os.ReadFile(p)
		if err != nil && !errNotExist(err) {
			return fmt.Errorf("%s: read %s: %w", b.name, p, err)
		}
		sums = append(sums, data...)
		sums = append(sums, '\n')
	}
	if err := os.WriteFile(strings.TrimSuffix(modfile, ".mod")+".sum", mergeSums(sums), 0o644); err != nil {
		return fmt.Errorf("%s: build: %w", b.name, err)
	}

	// Parsing first reports a broken go.mod with the folder's own line numbers (the copy
	// is still identical); an edit may reformat it.
	raw, err := b.goCmd(ctx, "mod", "edit", "-json", "-modfile="+modfile)
	if err != nil {
		return b.buildError(err, modfile)
	}
	var mod struct {
		Module  struct{ Path string }
		Require []struct{ Path string }
	}
	if err := json.Unmarshal(raw, &mod); err != nil {
		return fmt.Errorf("%s: go mod edit -json: %w", b.name, err)
	}
	if mod.Module.Path == sdkModulePath {
		return &BuildError{Folder: b.folder, File: "go.mod", Msg: fmt.Sprintf("the module path is %s, which is the SDK's own: name the tool's module after the tool (module %s)", sdkModulePath, b.name)}
	}
	args := []string{"mod", "edit", "-modfile=" + modfile}
	required := false
	for _, r := range mod.Require {
		required = required || r.Path == sdkModulePath
	}
	if !required {
		args = append(args, "-require="+sdkModulePath+"@v0.0.0")
	}
	args = append(args, "-replace="+sdkModulePath+"="+b.sdk)
	if _, err := b.goCmd(ctx, args...); err != nil {
		return b.buildError(err, modfile)
	}
	return nil
}

// mergeSums joins go.sum files, one line each.
func mergeSums(data []byte) []byte {
	seen := map[string]bool{}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !seen[l] {
			seen[l] = true
			lines = append(lines, l)
		}
	}
	sort.Strings(lines)
	if len(lines) == 0 {
		return nil
	}
	return []byte(strings.Join(lines, "\n") + "\n")
}

// goCmdError is a go command that failed, with what it printed.
type goCmdError struct {
	args   []string
	err    error
	output []byte
}

func (e *goCmdError) Error() string {
	return fmt.Sprintf("go %s: %v", strings.Join(e.args, " "), e.err)
}

func (e *goCmdError) Unwrap() error { return e.err }

// goCmd runs the go command in the folder with the build environment and returns its
// stdout; on failure a *goCmdError with stdout and stderr.
func (b *builder) goCmd(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, b.tc.Go, args...)
	cmd.Dir = b.folder
	cmd.Env = b.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		return nil, &goCmdError{args: args, err: err, output: append(stdout.Bytes(), stderr.Bytes()...)}
	}
	return stdout.Bytes(), nil
}

// A compiler or vet position: "./tool.go:12:5: undefined: foo", "tool.go:3: …", or an
// absolute path.
var positionLine = regexp.MustCompile(`^(.+?\.(?:go|mod|sum|s)):(\d+)(?::(\d+))?: (.+)$`)

// buildError turns a failed go command into a *BuildError that points into the folder.
func (b *builder) buildError(err error, modfile string) error {
	var ce *goCmdError
	if !errors.As(err, &ce) {
		return fmt.Errorf("%s: build: %w", b.name, err)
	}
	if errors.Is(ce.err, context.Canceled) || errors.Is(ce.err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: build stopped: %w", b.name, ce.err)
	}
	if errors.Is(ce.err, exec.ErrNotFound) || errors.Is(ce.err, fs.ErrNotExist) {
		return fmt.Errorf("%s: build: %w", b.name, ce)
	}
	// The copy of go.mod is the folder's own as far as the author is concerned. The go
	// command names it absolute or relative to the folder.
	output := string(ce.output)
	sumfile := strings.TrimSuffix(modfile, ".mod") + ".sum"
	for copyPath, own := range map[string]string{modfile: "go.mod", sumfile: "go.sum"} {
		output = strings.ReplaceAll(output, copyPath, filepath.Join(b.folder, own))
		if rel, err := filepath.Rel(b.folder, copyPath); err == nil {
			output = strings.ReplaceAll(output, rel, own)
		}
	}
	be := &BuildError{Folder: b.folder, Output: output}
	if len(be.Output) > maxOutput {
		be.Output = be.Output[:maxOutput] + "\n… (cut)"
	}
	for _, line := range strings.Split(output, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if m := positionLine.FindStringSubmatch(line); m != nil {
			be.File = b.relative(m[1])
			be.Line, _ = strconv.Atoi(m[2])
			be.Column, _ = strconv.Atoi(m[3])
			be.Msg = m[4]
			return be
		}
		if be.Msg == "" {
			be.Msg = strings.TrimPrefix(line, "go: ")
		}
	}
	if be.Msg == "" {
		be.Msg = ce.Error()
	}
	return be
}

// packageName reads the package clause of tool.go, for messages.
func (b *builder) packageName() string {
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(b.folder, "tool.go"), nil, parser.PackageClauseOnly)
	if err != nil {
		return "?"
	}
	return f.Name.Name
}

// relative names a file the go command printed relative to the folder when it lies there.
func (b *builder) relative(p string) string {
	if !filepath.IsAbs(p) {
		return filepath.ToSlash(filepath.Clean(p))
	}
	if rel, err := filepath.Rel(b.folder, p); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return p
}

// hashFolder hashes every file of the folder that can change the binary: all of them but
// hidden ones (.git, editor files) and the build cache when it lies inside, plus the Go
// version, the SDK and the target platform. Symlinked files count by content; symlinked
// directories are skipped, as the go command skips them.
func hashFolder(folder, cacheDir, goVersion string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "jean2 go tool v1\x00%s\x00%s\x00%s/%s\x00", goVersion, jean2.SDKHash(), runtime.GOOS, runtime.GOARCH)
	var files, total int64
	err := filepath.WalkDir(folder, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == folder {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") || p == cacheDir {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		fi, err := os.Stat(p) // follows a symlink
		if err != nil {
			if errNotExist(err) {
				return nil // a dangling link builds nothing
			}
			return err
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		files++
		total += fi.Size()
		if files > maxFolderFiles || total > maxFolderBytes {
			return fmt.Errorf("the folder holds more than %d files or %d MiB: a tool folder is source; move data elsewhere", maxFolderFiles, maxFolderBytes>>20)
		}
		rel, _ := filepath.Rel(folder, p)
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(rel), fi.Size())
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		if n, err := io.Copy(h, f); err != nil || n != fi.Size() {
			return fmt.Errorf("hash %s: changed while read (%d of %d bytes): %v", rel, n, fi.Size(), err)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("hash the folder: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

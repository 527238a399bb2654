// Package jean2 carries the source of jean2's Go SDK, so the host can build Go tool
// folders. A tool folder's go.mod requires github.com/jean2/jean2, which is published
// nowhere: the host writes the SDK's packages (tool, policy and the internal protocol
// packages they use) as a module on disk with WriteSDKModule and points the tool's build at
// it with a replace directive. The module is exactly the source this binary was built
// from, so a tool always speaks the protocol of the host that runs it.
package jean2

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

//go:embed go.mod go.sum tool/*.go policy/*.go internal/jsonrpc/*.go internal/workerproto/*.go internal/rawio/*.go internal/textdist/*.go
var sdkSource embed.FS

// sdkFile is one file of the SDK module; name is slash-separated, relative to the root.
type sdkFile struct {
	name string
	data []byte
}

type sdkModule struct {
	files []sdkFile // sorted by name
	hash  string
}

// sdk is the module as embedded, minus tests: computed once, never changed.
var sdk = sync.OnceValue(func() sdkModule {
	var m sdkModule
	err := fs.WalkDir(sdkSource, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(name, "_test.go") {
			return err
		}
		data, err := sdkSource.ReadFile(name)
		if err != nil {
			return err
		}
		m.files = append(m.files, sdkFile{name: name, data: data})
		return nil
	})
	if err != nil {
		// The embedded tree is part of the binary; failing to walk it is a build defect.
		panic("jean2: reading the embedded SDK source: " + err.Error())
	}
	sort.Slice(m.files, func(i, j int) bool { return m.files[i].name < m.files[j].name })
	h := sha256.New()
	for _, f := range m.files {
		fmt.Fprintf(h, "%s\x00%d\x00", f.name, len(f.data))
		h.Write(f.data)
	}
	m.hash = hex.EncodeToString(h.Sum(nil)[:12])
	return m
})

// SDKHash is the content hash of the SDK module: it names the written module and changes
// whenever any of its files does.
func SDKHash() string { return sdk().hash }

// SDKFiles lists the files of the SDK module, slash-separated and sorted.
func SDKFiles() []string {
	files := sdk().files
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = f.name
	}
	return names
}

// SDKGoVersion is the go directive of the SDK's go.mod (e.g. "1.26.8"): the least Go
// version a tool folder that uses the SDK can be built with.
func SDKGoVersion() string {
	for _, f := range sdk().files {
		if f.name != "go.mod" {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(f.data))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "go "); ok {
				return strings.TrimSpace(v)
			}
		}
	}
	return ""
}

// WriteSDKModule writes the SDK module into dir/<SDKHash>/, unless an intact copy is there
// already, and returns that directory. It is safe to call from many goroutines and
// processes at once: the module is written to a temporary directory and renamed into
// place, so a reader never sees half of it. A copy that was changed on disk is replaced.
func WriteSDKModule(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("write SDK module: no directory given")
	}
	m := sdk()
	target := filepath.Join(dir, m.hash)
	if verifySDK(target, m) == nil {
		return target, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("write SDK module: %w", err)
	}
	tmp, err := os.MkdirTemp(dir, ".sdk-"+m.hash+"-*")
	if err != nil {
		return "", fmt.Errorf("write SDK module: %w", err)
	}
	defer os.RemoveAll(tmp) // gone after a successful rename; cleans up otherwise
	if err := writeSDK(tmp, m); err != nil {
		return "", fmt.Errorf("write SDK module %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, target); err == nil {
		return target, nil
	}
	// Someone else put a copy there first, or a broken copy is in the way.
	if verifySDK(target, m) == nil {
		return target, nil
	}
	old := tmp + ".old"
	if err := os.Rename(target, old); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("write SDK module: move the damaged copy %s aside: %w", target, err)
	}
	defer os.RemoveAll(old)
	if err := os.Rename(tmp, target); err != nil {
		if verifySDK(target, m) == nil {
			return target, nil
		}
		return "", fmt.Errorf("write SDK module %s: %w", target, err)
	}
	return target, nil
}

func writeSDK(root string, m sdkModule) error {
	if err := os.Chmod(root, 0o755); err != nil {
		return err
	}
	for _, f := range m.files {
		p := filepath.Join(root, filepath.FromSlash(f.name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// verifySDK checks that dir holds exactly the module's files with their content: an extra
// .go file in a package would change what a tool is built from as much as an edited one.
func verifySDK(dir string, m sdkModule) error {
	want := make(map[string][]byte, len(m.files))
	for _, f := range m.files {
		want[f.name] = f.data
	}
	seen := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		name := filepath.ToSlash(rel)
		data, ok := want[name]
		if !ok {
			if path.Ext(name) == ".go" || path.Base(name) == "go.mod" || path.Base(name) == "go.sum" {
				return fmt.Errorf("unexpected file %s", name)
			}
			return nil // other files change no build
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", name)
		}
		got, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, data) {
			return fmt.Errorf("%s differs from the SDK", name)
		}
		seen++
		return nil
	})
	if err != nil {
		return err
	}
	if seen != len(m.files) {
		return fmt.Errorf("%d of %d files present", seen, len(m.files))
	}
	return nil
}

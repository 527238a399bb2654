// Package gotool builds Go tool folders and describes how to run them as workers. A Go tool
// folder holds tool.go (package main, calling tool.Serve) and go.mod requiring
// github.com/jean2/jean2. The host builds it with the local Go toolchain against the SDK
// source it carries (jean2.WriteSDKModule), caches the binary by content hash, and runs it
// in package worker's pool over the same protocol as the Node and Bun workers.
//
// The folder itself is never written to: the build uses a copy of its go.mod (and go.sum)
// with a replace directive pointing at the SDK module, and the go command runs with an
// environment built here, never the host's own.
package gotool

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	jean2 "github.com/jean2/jean2"
)

// Toolchain is a Go installation found on this machine.
type Toolchain struct {
	Go         string // absolute path of the go command
	Version    string // GOVERSION, e.g. go1.26.8
	GOROOT     string
	GOMODCACHE string // where modules are downloaded
	GOCACHE    string // the build cache
	GOPATH     string
}

func (tc Toolchain) String() string { return tc.Version + " (" + tc.Go + ")" }

// fallbackGo is where the official installer puts the go command; a server started by a
// service manager often has a PATH without it.
const fallbackGo = "/usr/local/go/bin/go"

// detectEnvNames are the variables `go env` may consult to find the user's configuration
// (cache and module directories, the go env file); nothing else of the host's reaches it.
var detectEnvNames = []string{"HOME", "PATH", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "GOENV", "GOPATH", "GOCACHE", "GOMODCACHE", "GOROOT"}

// Detect finds the Go toolchain: goPath when given (and nothing else), else `go` on PATH,
// else /usr/local/go/bin/go. It reads the toolchain's version and directories with
// `go env`, and refuses a toolchain older than the SDK's go.mod asks for.
func Detect(goPath string) (Toolchain, error) {
	path := goPath
	if path == "" {
		if p, err := exec.LookPath("go"); err == nil {
			path = p
		} else if isExecutable(fallbackGo) {
			path = fallbackGo
		} else {
			return Toolchain{}, fmt.Errorf("Go tool folders need the Go toolchain, and no `go` command was found (not on PATH, not at %s): install Go %s or newer from https://go.dev/dl/ and put its bin directory on PATH", fallbackGo, jean2.SDKGoVersion())
		}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return Toolchain{}, fmt.Errorf("go toolchain %s: %w", path, err)
	}
	if !isExecutable(abs) {
		return Toolchain{}, fmt.Errorf("Go tool folders need the Go toolchain, and %s is not an executable go command: install Go %s or newer from https://go.dev/dl/, or give the path of its bin/go", abs, jean2.SDKGoVersion())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, abs, "env", "GOVERSION", "GOROOT", "GOMODCACHE", "GOCACHE", "GOPATH")
	cmd.Env = []string{"GOTOOLCHAIN=local"}
	for _, name := range detectEnvNames {
		if v, ok := os.LookupEnv(name); ok {
			cmd.Env = append(cmd.Env, name+"="+v)
		}
	}
	// Away from any go.mod or go.work that could ask for another toolchain.
	cmd.Dir = os.TempDir()
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return Toolchain{}, fmt.Errorf("go toolchain %s: go env: %w", abs, err)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != 5 {
		return Toolchain{}, fmt.Errorf("go toolchain %s: go env printed %d lines, want 5: %q", abs, len(lines), out)
	}
	tc := Toolchain{Go: abs, Version: lines[0], GOROOT: lines[1], GOMODCACHE: lines[2], GOCACHE: lines[3], GOPATH: lines[4]}
	if tc.GOCACHE == "" || tc.GOCACHE == "off" {
		return Toolchain{}, fmt.Errorf("go toolchain %s: the build cache is off (GOCACHE=%q): set GOCACHE to a directory", abs, tc.GOCACHE)
	}
	if want := jean2.SDKGoVersion(); !versionAtLeast(tc.Version, want) {
		return Toolchain{}, fmt.Errorf("go toolchain %s is %s, too old for Go tool folders: they need Go %s or newer (https://go.dev/dl/)", abs, tc.Version, want)
	}
	return tc, nil
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// versionAtLeast compares a GOVERSION ("go1.26.8", "go1.27rc1", "devel go1.27-…") with a
// go.mod version ("1.26.8"). A development build is taken to be new enough.
func versionAtLeast(goversion, want string) bool {
	if strings.HasPrefix(goversion, "devel") || want == "" {
		return true
	}
	have := parseVersion(strings.TrimPrefix(goversion, "go"))
	need := parseVersion(want)
	for i := range have {
		if have[i] != need[i] {
			return have[i] > need[i]
		}
	}
	return true
}

func parseVersion(v string) [3]int {
	var out [3]int
	for i, part := range strings.SplitN(v, ".", 3) {
		// "27rc1" counts as 27: a release candidate of 1.27 is newer than any 1.26.
		end := 0
		for end < len(part) && part[end] >= '0' && part[end] <= '9' {
			end++
		}
		out[i], _ = strconv.Atoi(part[:end])
	}
	return out
}

// errNotExist reports whether err means a missing file.
func errNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

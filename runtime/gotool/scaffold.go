package gotool

import (
	"strconv"
	"strings"

	jean2 "github.com/jean2/jean2"
)

// Scaffold returns the files of a new Go tool folder named name (`jean2 tools new NAME
// --lang go`), by path relative to the folder: a go.mod requiring the SDK, and a tool.go
// that declares a typed tool, reads a file through the context's file system, logs through
// its logger and serves the host. The folder builds as it is.
func Scaffold(name string) map[string]string {
	safe := safeName(name)
	gomod := "module " + ModulePath(name) + "\n\ngo " + jean2.SDKGoVersion() + "\n\nrequire " + sdkModulePath + " v0.0.0\n"
	// One pass, so a name that contains a placeholder is not replaced again.
	src := strings.NewReplacer("NAME_LITERAL", strconv.Quote(name), "NAME", safe).Replace(toolTemplate)
	return map[string]string{
		"go.mod":  gomod,
		"tool.go": src,
		"VERSION": "0.1.0\n",
	}
}

// ModulePath is the module path Scaffold gives a tool's folder. It lies under a domain no
// one serves, so it can never collide with a standard library package or a real module.
func ModulePath(name string) string {
	return "jean2.local/tools/" + strings.ToLower(safeName(name))
}

// safeName keeps the characters a module path element and a comment can hold.
func safeName(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), ".-")
	if s == "" {
		s = "tool"
	}
	return s
}

const toolTemplate = `// Command NAME is a jean2 tool. The jean2 host builds this folder with the Go toolchain
// and runs it as a worker; every file access goes through the context (c.FS), where the
// host applies its policy and records changes. Edit run; keep main as it is.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/jean2/jean2/tool"
)

// Input is what the model sends. The input schema is inferred from it: a field without
// omitempty is required, and the jsonschema tag is its description.
type Input struct {
	Path  string ` + "`" + `json:"path" jsonschema:"The file to read, relative to the workspace"` + "`" + `
	Lines int    ` + "`" + `json:"lines,omitempty" jsonschema:"How many lines to show (default 20)"` + "`" + `
}

// Output is the result the model reads.
type Output struct {
	Path string ` + "`" + `json:"path"` + "`" + `
	Head string ` + "`" + `json:"head"` + "`" + `
}

func run(ctx context.Context, c *tool.Context, in Input) (Output, error) {
	data, err := c.FS.ReadFile(ctx, in.Path)
	if err != nil {
		return Output{}, err
	}
	n := in.Lines
	if n <= 0 {
		n = 20
	}
	lines := strings.Split(string(data), "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	c.Logger.Info("read file", "path", in.Path, "bytes", len(data))
	return Output{Path: in.Path, Head: strings.Join(lines, "\n")}, nil
}

func main() {
	t, err := tool.NewTyped(tool.Definition{
		Name:        NAME_LITERAL,
		Description: "Show the first lines of a text file in the workspace.",
		Timeout:     10000,
	}, run)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := tool.Serve(t); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
`

package builtin

import (
	"context"
	"errors"
	"strings"

	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/tool"
	"github.com/jean2/jean2/toolfs"
)

type writeFileIn struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

type writeFileOut struct {
	Path  string `json:"path"`
	Bytes int    `json:"bytes"`
}

// codeViz is the "code" visualization of a written file.
type codeViz struct {
	Type      string `json:"type"`
	Path      string `json:"path"`
	Content   string `json:"content"`
	Language  string `json:"language"`
	Created   bool   `json:"created"`
	LineCount int    `json:"lineCount"`
}

// WriteFile is write-file: creates or overwrites a file (folders made as needed).
func WriteFile() tool.Tool {
	return define(tool.Definition{
		Name:        "write-file",
		Description: "Write content to a file, creating it if it doesn't exist or overwriting if it does.\n\nIMPORTANT: Always prefer using the edit tool to modify existing files.\n\n## Permission Model\n\nThis tool requires explicit permission for:\n- Files outside the workspace\n- Sensitive files (.env, .pem, .key, credentials, etc.)",
		InputSchema: []byte(`{"type":"object","properties":{
			"path":{"type":"string","description":"Path to the file (absolute or relative)"},
			"content":{"type":"string","description":"The content to write to the file"}},
			"required":["path","content"]}`),
		Timeout:     30000,
		Annotations: destructive(),
	}, writeFile)
}

func writeFile(ctx context.Context, c *tool.Context, in writeFileIn) tool.Result {
	resolved := c.ResolvePath(in.Path)
	if r := precheck(ctx, c, resolved, "write", "Writing to system directories is not allowed: "+in.Path); r != nil {
		return *r
	}
	var existed bool
	if err := needAccess(ctx, c, resolved, "write", func() (err error) {
		existed, err = c.FS.Exists(ctx, resolved)
		return err
	}); err != nil {
		return fsFailure(err, "Writing to system directories is not allowed: "+in.Path)
	}
	// WriteFile makes a new file's missing folders, so a model need not make them first. They
	// are not looked at beforehand: outside the workspace only the file itself is allowed,
	// and a look at its folder would be refused.
	if err := writeMakingFolders(ctx, c, resolved, []byte(in.Content)); err != nil {
		return fsFailure(err, "Writing to system directories is not allowed: "+in.Path)
	}
	return ok(writeFileOut{Path: resolved, Bytes: len(in.Content)}, codeViz{
		Type: tool.VizCode, Path: resolved, Content: in.Content, Language: languageOf(resolved),
		Created: !existed, LineCount: strings.Count(in.Content, "\n") + 1,
	})
}

// writeMakingFolders writes a file, making its missing folders. The grant of a file outside
// the workspace does not cover making folders next to it (toolfs), so a folder the write
// would make there is asked for on its own, and the write tried once more.
func writeMakingFolders(ctx context.Context, c *tool.Context, resolved string, data []byte) error {
	err := c.FS.WriteFile(ctx, resolved, data)
	var fe *toolfs.Error
	if !errors.Is(err, toolfs.ErrOutsideScope) || !errors.As(err, &fe) || fe.Resolved == "" || !policy.Within(resolved, fe.Resolved) || fe.Resolved == resolved {
		return err
	}
	a := tool.CreateFilePermissionAsk(tool.FilePermission{Path: fe.Resolved, Operation: "write", Risk: "medium", IsOutsideWorkspace: true,
		Reason: "The folder does not exist: it is made to hold " + resolved + "."})
	if aerr := askYes(ctx, c, a); aerr != nil {
		return aerr
	}
	return c.FS.WriteFile(ctx, resolved, data)
}

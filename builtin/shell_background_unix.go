//go:build unix

package builtin

import (
	"os"
	"path/filepath"

	"github.com/jean2/jean2/internal/fsutil"
)

// createOutputFile makes a new file with a name no command can guess in the session's
// folder, through no link (commands may write that folder). The folder itself is reached
// from the one holding it: the workspace's tool workers may write that one, and could put a
// link in the session folder's place while the call runs.
func shellCreateOutput(dir, prefix string) (*os.File, error) {
	d, err := fsutil.OpenDirBeneath(filepath.Dir(dir), filepath.Base(dir))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return fsutil.CreateIn(d, prefix, ".log", 0o600)
}

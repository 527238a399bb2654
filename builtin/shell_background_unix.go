//go:build unix

package builtin

import (
	"os"

	"github.com/jean2/jean2/internal/fsutil"
)

// createOutputFile makes a new file with a name no command can guess in the session's
// folder, through no link (commands may write that folder).
func shellCreateOutput(dir, prefix string) (*os.File, error) {
	d, err := fsutil.OpenDirBeneath(dir, ".")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return fsutil.CreateIn(d, prefix, ".log", 0o600)
}

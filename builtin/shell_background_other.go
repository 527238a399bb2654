//go:build !unix

package builtin

import (
	"os"
	"path/filepath"

	"github.com/jean2/jean2/internal/fsutil"
)

func shellCreateOutput(dir, prefix string) (*os.File, error) {
	return os.OpenFile(filepath.Join(dir, fsutil.RandomName(prefix, ".log")), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
}

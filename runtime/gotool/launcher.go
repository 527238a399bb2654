package gotool

import (
	"fmt"

	"github.com/jean2/jean2/runtime/worker"
)

// KindGo is the runtime kind of Go tool workers.
const KindGo = "go"

// NewLauncher describes how to start a worker for a built Go tool: the binary itself, with
// env as its whole environment (nil means an empty one; the host passes only the tool's
// declared variables, which reach the tool through its context anyway) and dir as its
// working directory. The binary speaks the protocol on fd 3 and fd 4 through tool.Serve.
func NewLauncher(bin Binary, env []string, dir string) worker.Launcher {
	envCopy := append([]string{}, env...)
	return worker.Launcher{
		Kind: KindGo,
		Path: bin.Path,
		Env:  envCopy,
		Dir:  dir,
		Prepare: func() error {
			// The cache may have been cleaned since the build; say so rather than a bare
			// "no such file".
			if !isExecutable(bin.Path) {
				return fmt.Errorf("the built tool %s is gone (was the cache cleaned?): build the folder again", bin.Path)
			}
			return nil
		},
	}
}

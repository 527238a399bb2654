package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/jean2/jean2/policy"
)

// SealSettings chooses how each workspace root's settings folder (dirs: the roots' .jean2,
// policy.Scope.SettingsDirs) is kept read-only for a launched tree. A folder that lies in a
// protected place (jean2's own home, when the workspace is the user's home) is neither: the
// tree gets nothing of it anyway. Where canMount, each other folder is made ready for the
// launcher's read-only mount (made empty when missing, so that the tree cannot make one
// either) and returned in mounted (for Spec.SealedDirs); those that cannot be (the root is
// gone, .jean2 is a link or a file) are returned in unsealed with why, and the caller
// decides: a worker carves them out by Landlock rules (Plan.Sealed), the shell leaves them.
// Without canMount every folder is unsealed.
func SealSettings(dirs, protected []string, canMount bool) (mounted, unsealed []string, why []error) {
	for _, d := range dirs {
		real := policy.Real(d)
		if slices.ContainsFunc(protected, func(p string) bool { return p != "" && policy.Within(real, policy.Real(p)) }) {
			continue
		}
		if !canMount {
			unsealed = append(unsealed, d)
			continue
		}
		root := policy.Real(filepath.Dir(d))
		if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
			unsealed = append(unsealed, d) // nothing to grant there: the rules stay as they were
			continue
		}
		sealed, err := PrepareSealDir(root)
		if err != nil {
			unsealed, why = append(unsealed, d), append(why, fmt.Errorf("seal %s: %w", d, err))
			continue
		}
		mounted = append(mounted, sealed)
	}
	return mounted, unsealed, why
}

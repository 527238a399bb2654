//go:build !unix

package rawio

import "os"

// infoOf is an os.FileInfo's Info; SameFile asks os.SameFile here.
func infoOf(fi os.FileInfo) Info {
	return Info{mode: fi.Mode().Type(), size: fi.Size(), mod: fi.ModTime(), fi: fi}
}

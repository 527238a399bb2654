//go:build !unix

package fsutil

// lockNoFollow: os.OpenFile has no such flag here.
const lockNoFollow = 0

//go:build !unix

package install

import "context"

// lockName is a no-op where flock is not available; installs of one tool from two
// processes at once are then not prevented.
func lockName(context.Context, string, string, func()) (func(), error) { return func() {}, nil }

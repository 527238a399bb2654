package host

import (
	"errors"
	"testing"
)

// The load error a confined worker gives when its bundle was replaced after it started is
// told apart from the tool's own EACCES on another file.
func TestRefusedOwnBundle(t *testing.T) {
	bundle := "/home/u/.jean2/cache/bundles/abc.mjs"
	own := errors.New("tool x failed to load at " + bundle + ": Error: EACCES: permission denied, open '" + bundle + "'")
	other := errors.New("tool x failed to load at /t/tool.ts:3:1: Error: EACCES: permission denied, open '/etc/secret'")
	if !refusedOwnBundle(own, bundle) || refusedOwnBundle(other, bundle) || refusedOwnBundle(own, "") {
		t.Fatal("refusedOwnBundle misjudged")
	}
}

//go:build !linux

package sandbox

import "errors"

var errNoMountSeal = errors.New("mount namespaces exist only on Linux")

func sealDirs([]string) error { return errNoMountSeal }

func probeSeal(string) error { return errNoMountSeal }

const probeSealArg = "--probe-seal"

// PrepareSealDir reports that folders cannot be sealed by a mount here.
func PrepareSealDir(string) (string, error) { return "", errNoMountSeal }

// MountSealAvailable reports that folders cannot be sealed by a mount here.
func MountSealAvailable(string, bool) error { return errNoMountSeal }

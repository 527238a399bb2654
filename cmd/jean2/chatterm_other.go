//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package main

import "os"

// ctrlLEndsLine does nothing here: Ctrl-L counts once Enter is pressed.
func ctrlLEndsLine(*os.File) (restore func()) { return func() {} }

package main

import (
	"os"
	"slices"
	"strings"
	"syscall"
)

// unmountBelow detaches every mount beneath dir (this process's view of them), the deepest
// first.
func unmountBelow(dir string) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		if p := strings.ReplaceAll(f[4], `\040`, " "); strings.HasPrefix(p, dir+"/") {
			points = append(points, p)
		}
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	for _, p := range points {
		_ = syscall.Unmount(p, syscall.MNT_DETACH)
	}
}

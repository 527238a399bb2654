package sandbox

import (
	"fmt"
	"strings"

	"github.com/jean2/jean2/policy"
)

// NodePermissionArgs returns the flags that make Node's permission model hold a Node worker
// to rules where Landlock is missing: --allow-fs-read for every readable path,
// --allow-fs-write for every writable one, child processes only when childProcess is set,
// worker threads (they inherit the restrictions), no native addons (they would bypass it).
// Listing-only rules have no equivalent and grant nothing. A path Node would read as a
// wildcard (holding '*') is left out rather than widened. version is Node's, e.g.
// "20.20.2": Node 20 to 22.12 spell the switch --experimental-permission, later ones
// --permission.
//
// A readable path below another readable one is not listed again: Node reads a folder's
// grant as reaching below it, and Node 20 refuses the folder itself when a path below it is
// listed too (a sealed workspace is read with its entries read-write, plan.go).
func NodePermissionArgs(version string, rules []Rule, childProcess bool) []string {
	args := []string{permissionFlag(version)}
	var readable []string
	for _, r := range rules {
		if r.Access&(Read|Write) != 0 && !strings.ContainsRune(r.Path, '*') {
			readable = append(readable, r.Path)
		}
	}
	covered := func(p string) bool {
		for _, q := range readable {
			if q != p && policy.Within(p, q) {
				return true
			}
		}
		return false
	}
	for _, r := range rules {
		if strings.ContainsRune(r.Path, '*') {
			continue
		}
		if r.Access&(Read|Write) != 0 && !covered(r.Path) {
			args = append(args, "--allow-fs-read="+r.Path)
		}
		if r.Access&Write != 0 {
			args = append(args, "--allow-fs-write="+r.Path)
		}
	}
	if childProcess {
		args = append(args, "--allow-child-process")
	}
	return append(args, "--allow-worker")
}

func permissionFlag(version string) string {
	var major, minor int
	fmt.Sscanf(version, "%d.%d", &major, &minor)
	if major > 23 || (major == 23 && minor >= 5) || (major == 22 && minor >= 13) {
		return "--permission"
	}
	return "--experimental-permission"
}

// NodePermissionsUsable reports whether a Node version has the permission model jean2
// relies on (20 and later).
func NodePermissionsUsable(version string) bool {
	var major int
	fmt.Sscanf(version, "%d", &major)
	return major >= 20
}

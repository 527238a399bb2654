package sandbox

import (
	"os"
	"path/filepath"
	"slices"

	"github.com/jean2/jean2/policy"
)

// View is the filesystem view of the plan (View, view_linux.go): its writable places
// (ReadWrite, DeclaredWrite) bound read-write, its protected places and hidden hidden, and
// what it reads or writes inside a hidden place shown again there — the tool's folder, its
// bundle and runtime, the session's temporary folder. The .jean2 folders it seals by a mount
// (MountSealed) are shown read-only. hidden are more places to hide: the jean2 binary, a
// workspace file a person refused.
func (p Plan) View(hidden ...string) *View {
	v := &View{}
	real := func(x string) string { return p.Resolver.Real(filepath.Clean(x)) }
	for _, x := range append(slices.Clone(p.Protected), hidden...) {
		if x != "" && filepath.IsAbs(x) {
			v.Hidden = append(v.Hidden, real(x))
		}
	}
	inHidden := func(x string) bool {
		return slices.ContainsFunc(v.Hidden, func(h string) bool { return policy.Within(x, h) })
	}
	for _, x := range p.ReadWrite {
		if x != "" && filepath.IsAbs(x) && !p.systemPlace(x) {
			v.Writable = append(v.Writable, real(x))
		}
	}
	for _, x := range p.DeclaredWrite {
		if x != "" && filepath.IsAbs(x) && !p.systemPlace(x) && !inHidden(real(x)) {
			v.Writable = append(v.Writable, real(x))
		}
	}
	reads := append([]string{p.Program, p.RuntimeRoot}, p.ReadOnly...)
	reads = append(reads, p.Modules...)
	for _, x := range reads {
		if x != "" && filepath.IsAbs(x) && inHidden(real(x)) {
			v.ReadOnly = append(v.ReadOnly, real(x))
		}
	}
	for _, x := range p.MountSealed {
		if x != "" && filepath.IsAbs(x) {
			v.ReadOnly = append(v.ReadOnly, real(x))
		}
	}
	v.Binds = slices.Clone(p.Binds)
	if p.Tmp != "" && filepath.IsAbs(p.Tmp) && p.tmpFree() {
		v.Binds = append(v.Binds, Bind{Source: real(p.Tmp), Target: "/tmp", Write: true})
	}
	v.Hidden, v.Writable, v.ReadOnly = uniq(v.Hidden), uniq(v.Writable), uniq(v.ReadOnly)
	return v
}

// tmpFree reports whether the view may show Tmp at /tmp: the machine's /tmp is a real
// folder (the launcher refuses a link on the way) and nothing the plan shows, runs or
// grants lies in it. Binding over a /tmp that held the workspace, jean2's home, the
// runtime or the session's folder itself would hide it from the process (or, shown again,
// make its mount points inside the session's folder): such a view keeps the machine's
// /tmp, read-only, and TMPDIR alone leads to the session's folder.
func (p Plan) tmpFree() bool {
	if fi, err := os.Lstat("/tmp"); err != nil || !fi.IsDir() {
		return false
	}
	places := []string{p.Program, p.RuntimeRoot, p.Tmp}
	for _, list := range [][]string{p.ReadOnly, p.Modules, p.ReadWrite, p.DeclaredRead, p.DeclaredWrite, p.MountSealed} {
		places = append(places, list...)
	}
	for _, b := range p.Binds {
		places = append(places, b.Source, b.Target)
	}
	for _, x := range places {
		if x == "" || !filepath.IsAbs(x) {
			continue
		}
		if policy.Within(filepath.Clean(x), "/tmp") || policy.Within(p.Resolver.Real(filepath.Clean(x)), "/tmp") {
			return false
		}
	}
	return true
}

func uniq(xs []string) []string {
	slices.Sort(xs)
	return slices.Compact(xs)
}

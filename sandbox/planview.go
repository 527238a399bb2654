package sandbox

import (
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
	v.Hidden, v.Writable, v.ReadOnly = uniq(v.Hidden), uniq(v.Writable), uniq(v.ReadOnly)
	return v
}

func uniq(xs []string) []string {
	slices.Sort(xs)
	return slices.Compact(xs)
}

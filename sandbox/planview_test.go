package sandbox

import (
	"os"
	"slices"
	"testing"
)

// The view shows the plan's Tmp at /tmp, read-write, unless a place the plan names lies in
// /tmp: there the bind would hide it.
func TestPlanViewTmp(t *testing.T) {
	if fi, err := os.Lstat("/tmp"); err != nil || !fi.IsDir() {
		t.Skipf("no /tmp folder here: %v", err)
	}
	bound := func(p Plan) bool {
		return slices.Contains(p.View().Binds, Bind{Source: "/srv/home/tmp/s1", Target: "/tmp", Write: true})
	}
	p := Plan{Program: "/usr/bin/bash", ReadWrite: []string{"/srv/ws", "/srv/home/tmp/s1"}, Tmp: "/srv/home/tmp/s1"}
	if !bound(p) {
		t.Fatalf("no bind of the session folder at /tmp: %+v", p.View().Binds)
	}
	for name, change := range map[string]func(*Plan){
		"workspace in /tmp":    func(p *Plan) { p.ReadWrite[0] = "/tmp/ws" },
		"program in /tmp":      func(p *Plan) { p.Program = "/tmp/bin/node" },
		"read-only in /tmp":    func(p *Plan) { p.ReadOnly = []string{"/tmp/tool"} },
		"bind target in /tmp":  func(p *Plan) { p.Binds = []Bind{{Source: "/srv/d", Target: "/tmp/d"}} },
		"declared write /tmp":  func(p *Plan) { p.DeclaredWrite = []string{"/tmp"} },
		"no temporary folder":  func(p *Plan) { p.Tmp = "" },
		"relative temp folder": func(p *Plan) { p.Tmp = "tmp/s1" },
	} {
		q := p
		q.ReadWrite = slices.Clone(p.ReadWrite)
		change(&q)
		if bound(q) || slices.ContainsFunc(q.View().Binds, func(b Bind) bool { return b.Target == "/tmp" }) {
			t.Errorf("%s: /tmp bound anyway: %+v", name, q.View().Binds)
		}
	}
}

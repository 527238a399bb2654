package sandbox

import (
	"fmt"
	"path/filepath"
	"sync"

	"github.com/jean2/jean2/internal/rawio"
	"github.com/jean2/jean2/policy"
)

// Pins keeps where each workspace folder (or allowed path) led when it was first used. A
// workspace may lie inside another (~/code and ~/code/app), whose tools may write it: one
// can move the inner folder aside and put a link in its place, to the rest of the user's
// files or to "/". Resolved afresh, the inner workspace's grants would land on the link's
// target; pinned, a folder that leads elsewhere now is refused. The zero Pins is ready.
type Pins struct {
	m sync.Map // clean path → *pin
	// Stater makes the check at every call (raw where that is safe: rawio.Stater says
	// why); nil stats through os.Stat. Set before the first use.
	Stater *rawio.Stater
}

type pin struct {
	real string
	fi   *rawio.Info // the folder found there by the last check
}

// Real returns where root really is: where it led when first asked. While the folder there
// is the same one (one stat) nothing is resolved; another folder at the same real place (a
// folder made again) is accepted; anywhere else is an error that says what happened.
func (p *Pins) Real(root string) (string, error) {
	root = filepath.Clean(root)
	fi, statErr := p.Stater.Stat(root)
	if v, ok := p.m.Load(root); ok && statErr == nil && v.(*pin).fi != nil && v.(*pin).fi.SameFile(fi) {
		return v.(*pin).real, nil
	}
	real := policy.Real(root)
	if real == string(filepath.Separator) {
		return "", fmt.Errorf("the workspace folder %s now leads to the whole file system (a folder on its way was replaced by a link): refused until it is put back", root)
	}
	next := &pin{real: real}
	if statErr == nil {
		next.fi = &fi
	}
	if was, loaded := p.m.LoadOrStore(root, next); loaded {
		if was.(*pin).real != real {
			return "", fmt.Errorf("the workspace folder %s now leads to %s, not to %s as when jean2 first used it: a folder on its way was replaced, by a link perhaps (a tool of a workspace that holds it can do that). Refused until the folder is put back; if you moved it on purpose, restart jean2", root, real, was.(*pin).real)
		}
		if next.fi != nil {
			p.m.Store(root, next)
		}
	}
	return real, nil
}

// Set pins root where it leads now, replacing an earlier pin: a person just chose the
// folder (added a workspace, changed its path), which is the judgement to keep.
func (p *Pins) Set(root string) string {
	root = filepath.Clean(root)
	next := &pin{real: policy.Real(root)}
	if fi, err := p.Stater.Stat(root); err == nil {
		next.fi = &fi
	}
	p.m.Store(root, next)
	return next.real
}

// WritesWithin checks the rules a plan made: every rule the planner resolved (Exact) that
// grants writing lies within one of places (real paths). The planner resolves each folder
// again; a folder swapped for a link between the caller's check (Pins) and the plan would
// otherwise be granted where the link leads. The launcher keeps each rule to its path
// from then on (Exact).
func WritesWithin(rules []Rule, places []string) error {
	for _, r := range rules {
		if !r.Exact || r.Access&Write == 0 {
			continue
		}
		ok := false
		for _, p := range places {
			if p != "" && policy.Within(r.Path, p) {
				ok = true
				break
			}
		}
		if !ok {
			return fmt.Errorf("the rule %s lies outside the folders it was made for (%v): a folder on the way was replaced by a link meanwhile; refused", r, places)
		}
	}
	return nil
}

package sandbox

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/jean2/jean2/tool"
)

// Two jean2 processes changing approvals.json at once (a server granting while the CLI
// revokes, two CLIs granting) must not undo each other's changes: each Approvals here
// stands for a process (its own copy of the file and its own lock descriptor).
func TestApprovalsChangesFromManyProcessesAllLand(t *testing.T) {
	path := filepath.Join(t.TempDir(), "approvals.json")
	if _, err := OpenApprovals(path).AddGrant("victim", "v1", tool.Permissions{Read: []string{"/secret"}}); err != nil {
		t.Fatal(err)
	}
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n+1)
	for i := range n {
		wg.Go(func() {
			a := OpenApprovals(path)
			if _, err := a.Granted("warm", "v"); err != nil { // each has read the file before
				errs <- err
				return
			}
			_, err := a.AddGrant(fmt.Sprintf("t%d", i), "v", tool.Permissions{Read: []string{fmt.Sprintf("/d%d", i)}})
			errs <- err
		})
		if i == n/2 {
			wg.Go(func() { errs <- OpenApprovals(path).Revoke("victim") })
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	fresh := OpenApprovals(path)
	if g, err := fresh.Granted("victim", "v1"); g != nil || err != nil {
		t.Fatalf("the revoked grant came back: %+v %v", g, err)
	}
	for i := range n {
		g, err := fresh.Granted(fmt.Sprintf("t%d", i), "v")
		if err != nil || g == nil || len(g.Read) != 1 || g.Read[0] != fmt.Sprintf("/d%d", i) {
			t.Fatalf("grant %d was lost: %+v %v", i, g, err)
		}
	}
}

package server

import (
	"context"
	"net/http"
	"sync"
)

// gate makes deleting a session or a workspace atomic with starting work in it. A delete
// checks that nothing runs and then deletes; without the gate a turn, a restore or a tool
// run could start between the check and the delete and go on in a session that is gone.
//
// Work that starts in a session holds the gate shared while it starts (a turn: until the
// harness has claimed the session, which Running reports from then on) or for as long as
// it runs (a restore and a tool run, which Running does not report). A delete holds it
// exclusively across its check and its delete, so it sees every start that began before
// it, and every start that comes after it finds the session gone.
type gate struct {
	mu sync.RWMutex // shared: starting work; exclusive: deleting

	activeMu sync.Mutex
	active   map[string]int // "session:<id>" / "workspace:<id>" → work in flight the harness does not report
}

func sessionKey(id string) string   { return "session:" + id }
func workspaceKey(id string) string { return "workspace:" + id }

// starting holds the gate shared until the returned func is called: for work whose
// starting the harness makes visible (Running) once it has started.
func (g *gate) starting() (done func()) {
	g.mu.RLock()
	return g.mu.RUnlock
}

// enter marks work in flight on keys until the returned func is called; a delete of any of
// them meanwhile is refused as busy.
func (g *gate) enter(keys ...string) (leave func()) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	g.activeMu.Lock()
	if g.active == nil {
		g.active = map[string]int{}
	}
	for _, k := range keys {
		g.active[k]++
	}
	g.activeMu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			g.activeMu.Lock()
			for _, k := range keys {
				if g.active[k]--; g.active[k] <= 0 {
					delete(g.active, k)
				}
			}
			g.activeMu.Unlock()
		})
	}
}

// busy reports whether work marked by enter is in flight on key.
func (g *gate) busy(key string) bool {
	g.activeMu.Lock()
	defer g.activeMu.Unlock()
	return g.active[key] > 0
}

// deleting holds the gate exclusively until the returned func is called: no work starts
// meanwhile.
func (g *gate) deleting() (done func()) {
	g.mu.Lock()
	return g.mu.Unlock
}

// sessionBusy says why the session cannot be deleted now, or nil. Call it under deleting.
func (s *Server) sessionBusy(id string) error {
	switch {
	case s.running(context.Background(), id):
		return errorf(http.StatusConflict, codeBusy, "session %s is running a turn; stop it first (POST /api/sessions/%s/stop)", id, id)
	case s.gate.busy(sessionKey(id)):
		return errorf(http.StatusConflict, codeBusy, "session %s is restoring files or running a tool; wait for it to end", id)
	}
	return nil
}

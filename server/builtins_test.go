package server

import (
	"testing"

	"github.com/jean2/jean2/builtin"
	"github.com/jean2/jean2/host"
)

// The settings turn built-ins off while the server runs, and back on; the list is kept
// across a restart and applied before the first turn.
func TestDisabledBuiltinsSetting(t *testing.T) {
	f := newFixture(t)
	f.cfg.Host.Builtins = builtin.Tools(builtin.Options{})
	f.start()
	status := func(name string) string {
		var list struct{ Tools []host.Entry }
		f.call("GET", "/api/tools", nil, 200, &list)
		for _, e := range list.Tools {
			if e.Name == name {
				return e.Status
			}
		}
		return "missing"
	}
	if got := status("grep"); got != host.StatusOK {
		t.Fatalf("grep before: %s", got)
	}
	var st settingsAnswer
	f.call("PATCH", "/api/settings", map[string]any{"disabledBuiltins": []string{"grep", "question"}}, 200, &st)
	if len(st.DisabledBuiltins) != 2 || status("grep") != host.StatusDisabled || status("question") != host.StatusDisabled || status("read-file") != host.StatusOK {
		t.Fatalf("after turning off: %+v grep=%s", st, status("grep"))
	}
	if code := errorCode(t, f.call("PATCH", "/api/settings", map[string]any{"disabledBuiltins": []string{""}}, 400, nil)); code != codeBadRequest {
		t.Fatalf("empty name: %s", code)
	}
	f.stop()
	f.start()
	if status("grep") != host.StatusDisabled {
		t.Fatal("grep came back on after a restart")
	}
	f.call("PATCH", "/api/settings", map[string]any{"disabledBuiltins": []string{}}, 200, &st)
	if status("grep") != host.StatusOK || status("question") != host.StatusOK {
		t.Fatalf("after turning back on: grep=%s question=%s", status("grep"), status("question"))
	}
}

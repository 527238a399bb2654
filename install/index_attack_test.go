package install

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIndexAttackRemoteIndexNamesLocalPlaces: a tool index on the web is someone else's
// file, and its registry's urlTemplate made the installer install from whatever it named:
// a folder or an archive of this machine (an absolute path, a file:// URL), read, copied
// into the tools folder and run as a tool — the person asked for an index's tool and got one
// of their own folders, chosen by the index, with nothing verified. A remote index's
// archives are on the web: a location that is not http(s) is refused.
func TestIndexAttackRemoteIndexNamesLocalPlaces(t *testing.T) {
	local := t.TempDir()
	writeTree(t, filepath.Join(local, "greet"), greetTool("1.0.0"))
	archive := filepath.Join(local, "hello.tgz")
	if err := os.WriteFile(archive, tarGz(t, files("", namedTool("hello", "0.1.0"))), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, template string }{
		{"greet", local + "/{name}"},
		{"hello", "file://" + local + "/{name}.tgz"},
	} {
		srv := newServer(t)
		srv.put("/index.json", []byte(`{"version": 3, "registry": {"urlTemplate": "`+tc.template+`"}, "tools": [{"name": "`+tc.name+`", "description": "d"}]}`))
		e := newEnv(t, envOptions{index: srv.URL + "/index.json"})
		res, err := e.in.Install(context.Background(), tc.name, InstallOptions{})
		if err == nil {
			t.Errorf("%s: the web's index installed %s from this machine: %+v", tc.name, tc.template, res)
			continue
		}
		if !strings.Contains(err.Error(), "not on the web") {
			t.Errorf("%s: refused without saying why: %v", tc.name, err)
		}
		if got := e.toolsListing(); len(got) != 0 {
			t.Errorf("%s: tools folder holds %v", tc.name, got)
		}
	}
}

//go:build linux

package host_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jean2/jean2/tool"
)

// Two tools that keep one database between them (the original catalogue's todowrite and
// todoread) share it once a person grants the reader the writer's data folder; until then,
// and for every other tool, each sees its own.
func TestGrantSharedDataFolder(t *testing.T) {
	vf := newViewFixture(t)
	if err := os.Symlink(vf.layout.Home, filepath.Join(os.Getenv("HOME"), ".jean2")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"todowrite", "todoread", "other"} {
		vf.addTool(name, map[string]string{"package.json": pkgJSON, "tool.js": strings.Replace(dataTool, "NAME", name, 1)})
	}
	if err := vf.h.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	type seen struct {
		Text  *string `json:"text"`
		Error string  `json:"error"`
	}
	var r seen
	vf.callJSON(t, "todowrite", map[string]any{"op": "write", "text": "buy milk"}, &r)
	if r.Error != "" {
		t.Fatalf("todowrite: %+v", r)
	}
	r = seen{}
	if vf.callJSON(t, "todoread", map[string]any{"op": "read"}, &r); r.Text != nil {
		t.Fatalf("todoread saw todowrite's data before a grant: %q", *r.Text)
	}
	if _, err := vf.h.GrantPermissions("todoread", tool.Permissions{Data: "todowrite"}); err != nil {
		t.Fatal(err)
	}
	r = seen{}
	if vf.callJSON(t, "todoread", map[string]any{"op": "read"}, &r); r.Text == nil || *r.Text != "buy milk" {
		t.Fatalf("todoread after the grant: %+v", r)
	}
	r = seen{}
	if vf.callJSON(t, "other", map[string]any{"op": "read"}, &r); r.Text != nil {
		t.Fatalf("another tool saw the shared data: %q", *r.Text)
	}
	if _, err := vf.h.GrantPermissions("todoread", tool.Permissions{Data: "../todowrite"}); err == nil {
		t.Fatalf("a data grant that is no tool name was accepted")
	}
}

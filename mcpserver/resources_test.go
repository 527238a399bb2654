package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An overflowing result's file (the string result of big: text) is a resource that a client on either revision lists and
// reads back whole; a link planted in its place is not followed.
func TestOverflowIsAResource(t *testing.T) {
	r := newRig(t)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("not for the client"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, version := range []string{newest, classic} {
		cs := r.connect(version, nil)
		res := call(t, cs, "big", nil)
		var over host.Overflow
		_ = json.Unmarshal([]byte(toJSON(res.Meta[mcpserver.MetaOverflow])), &over)
		uri := mcpserver.OverflowScheme + filepath.Base(over.Path)
		var found *mcp.Resource
		for res, err := range cs.Resources(context.Background(), nil) {
			if err != nil {
				t.Fatalf("%s: resources/list: %v", version, err)
			}
			if res.URI == uri {
				found = res
			}
		}
		if found == nil || found.MIMEType != "text/plain" || !strings.Contains(found.Title, "big") {
			t.Fatalf("%s: %s not listed as wanted: %s", version, uri, toJSON(found))
		}
		read, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
		if err != nil || len(read.Contents) != 1 || !strings.Contains(read.Contents[0].Text, strings.Repeat("x", 60_000)) {
			t.Fatalf("%s: resources/read %s: %v %s", version, uri, err, toJSON(read))
		}
		// The tool's folder is the worker's: a link swapped in for the file reads nothing.
		if err := os.Remove(over.Path); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(secret, over.Path); err != nil {
			t.Fatal(err)
		}
		if read, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri}); err == nil {
			t.Fatalf("%s: a link in place of %s was read: %s", version, over.Path, toJSON(read))
		}
	}
}

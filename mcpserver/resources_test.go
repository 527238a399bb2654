package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/mcpserver"
	"github.com/jean2/jean2/tool"
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

// A workspace file is read through the template as a tool's ctx.fs reads it: inside the
// workspace only (no way out by .. or by a link), a sensitive file refused, a missing one
// not found.
func TestWorkspaceFilesAreResources(t *testing.T) {
	r := newRig(t)
	outside := filepath.Join(t.TempDir(), "outside.txt")
	for path, body := range map[string]string{
		filepath.Join(r.ws, "a.txt"):       "alpha",
		filepath.Join(r.ws, "sub", "b.md"): "# beta",
		filepath.Join(r.ws, ".env"):        "KEY=secret",
		filepath.Join(r.ws, "bin.dat"):     "\xff\x00\x01",
		outside:                            "not for the client",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(r.ws, "link.txt")); err != nil {
		t.Fatal(err)
	}
	for _, version := range []string{newest, classic} {
		cs := r.connect(version, nil)
		var templates []string
		for tpl, err := range cs.ResourceTemplates(context.Background(), nil) {
			if err != nil {
				t.Fatalf("%s: templates: %v", version, err)
			}
			templates = append(templates, tpl.URITemplate)
		}
		if len(templates) != 1 || templates[0] != mcpserver.WorkspaceScheme+"{+path}" {
			t.Fatalf("%s: templates %v", version, templates)
		}
		read := func(rel string) (*mcp.ResourceContents, error) {
			res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: mcpserver.WorkspaceScheme + rel})
			if err != nil {
				return nil, err
			}
			return res.Contents[0], nil
		}
		for rel, want := range map[string]string{"a.txt": "alpha", "sub/b.md": "# beta"} {
			if c, err := read(rel); err != nil || c.Text != want || c.MIMEType != "text/plain" {
				t.Fatalf("%s: %s: %v %s", version, rel, err, toJSON(c))
			}
		}
		if c, err := read("bin.dat"); err != nil || string(c.Blob) != "\xff\x00\x01" || c.Text != "" {
			t.Fatalf("%s: bin.dat: %v %s", version, err, toJSON(c))
		}
		for _, rel := range []string{".env", "link.txt", "../" + filepath.Base(filepath.Dir(outside)) + "/outside.txt", "sub/%2e%2e/%2e%2e/x", "missing.txt"} {
			c, err := read(rel)
			if err == nil {
				t.Fatalf("%s: %s was read: %s", version, rel, toJSON(c))
			}
			t.Logf("%s: %s: %v", version, rel, err)
		}
	}
}

// A client on 2025-11-25 subscribed to a workspace file hears when a call changes it
// through ctx.fs; a URI jean2 offers nothing under is refused.
func TestWorkspaceFileSubscription(t *testing.T) {
	r := newRig(t)
	r.src.mu.Lock()
	r.src.tools = []tool.Tool{&tool.Func{Def: tool.Definition{Name: "writer", Description: "Write a.txt.", InputSchema: obj(`{"type":"object"}`)},
		Run: func(ctx context.Context, c *tool.Context, _ json.RawMessage) tool.Result {
			if err := c.FS.WriteFile(ctx, "sub/a b.txt", []byte("new")); err != nil {
				return tool.Errorf("%v", err)
			}
			return tool.Success("written")
		}}}
	r.src.mu.Unlock()
	if err := r.h.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	updated := make(chan string, 4)
	cs := r.connect(classic, &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
		updated <- req.Params.URI
	}})
	uri := mcpserver.WorkspaceURI(filepath.Join("sub", "a b.txt"))
	if uri != mcpserver.WorkspaceScheme+"sub/a%20b.txt" {
		t.Fatalf("WorkspaceURI: %s", uri)
	}
	if err := cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	if err := cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: "test://watched-resource"}); err == nil {
		t.Fatal("a subscription to a URI jean2 offers nothing under was taken")
	}
	// The server's tool list follows the host's reload a moment later (list_changed).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(res.Tools, func(tl *mcp.Tool) bool { return tl.Name == "writer" }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server does not list writer 10 s after the reload")
		}
	}
	if got := text(call(t, cs, "writer", nil)); !strings.Contains(got, "written") {
		t.Fatalf("writer: %s", got)
	}
	select {
	case got := <-updated:
		if got != uri {
			t.Fatalf("updated %s, want %s", got, uri)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/resources/updated after the call changed the file")
	}
	if err := cs.Unsubscribe(context.Background(), &mcp.UnsubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
}

// TestResourceAttackWorkspaceSizeBomb: a hostile tool leaves a large (sparse, so free to
// make) file in the workspace and its result steers the client's model to read it as a
// resource. A read is as large as the file: one resources/read made jean2 itself — not the
// tool's worker, whose memory is capped — hold the file, its text and its encoding at once,
// and a few at a time starve the server. A workspace file larger than what a resource
// sends at most is refused, its size named, and is never read whole.
func TestResourceAttackWorkspaceSizeBomb(t *testing.T) {
	r := newRig(t)
	const size = 96 << 20
	bomb := filepath.Join(r.ws, "report.log")
	f, err := os.Create(bomb)
	if err == nil {
		err = errors.Join(f.Truncate(size), f.Close())
	}
	if err != nil {
		t.Fatal(err)
	}
	cs := r.connect(newest, nil)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: mcpserver.WorkspaceScheme + "report.log"})
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("resources/read of a %d MiB file: %v; %d MiB allocated", size>>20, err, allocated>>20)
	if err == nil {
		t.Fatalf("a %d MiB workspace file was sent whole (%d bytes of text), %d MiB allocated", size>>20, len(res.Contents[0].Text), allocated>>20)
	}
	if !strings.Contains(err.Error(), "too large") {
		t.Fatalf("the refusal does not say why: %v", err)
	}
	if allocated > 48<<20 {
		t.Fatalf("refusing the file allocated %d MiB", allocated>>20)
	}
}

// TestResourceAttackOverflowSwelled: an overflowing result's file lies in the session's
// temporary folder, which the tool's worker writes. The tool swells the file after the
// call (sparse: free to make) to what one resources/read sends at most, and the client
// reads it back: jean2 answered with as many NUL bytes, each sent as \u0000. The file is
// read back at most as long as the result the host wrote there could be.
func TestResourceAttackOverflowSwelled(t *testing.T) {
	r := newRig(t)
	cs := r.connect(newest, nil)
	res := call(t, cs, "big", nil)
	var over host.Overflow
	_ = json.Unmarshal([]byte(toJSON(res.Meta[mcpserver.MetaOverflow])), &over)
	uri := mcpserver.OverflowScheme + filepath.Base(over.Path)
	if err := os.Truncate(over.Path, 48<<20); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	read, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("resources/read of a result of %d characters swelled to 48 MiB: %v; %d MiB allocated", over.Chars, err, allocated>>20)
	if err == nil {
		t.Fatalf("the swelled file was sent (%d bytes of text)", len(read.Contents[0].Text))
	}
	if allocated > 32<<20 {
		t.Fatalf("refusing the swelled file allocated %d MiB", allocated>>20)
	}
}

package mcpserver_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pngPixel is a 1×1 PNG.
var pngPixel = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00\x90wS\xde")

// The YAML files of $JEAN2_HOME/resources are resources and templates, on either revision:
// inline text, a file beside them as a blob, a template whose {id} is filled in; a broken
// file and a file that leads out of the folder offer nothing; a subscriber hears of a change.
func TestAuthoredResources(t *testing.T) {
	r := newRig(t)
	dir := filepath.Join(r.h.Layout().Home, "resources")
	write(t, filepath.Join(dir, "note.yaml"), "uri: notes://today\ntitle: Today\ntext: Buy milk.\n")
	write(t, filepath.Join(dir, "pixel.yaml"), "uri: img://pixel\nfile: pixel.png\n")
	write(t, filepath.Join(dir, "pixel.png"), string(pngPixel))
	write(t, filepath.Join(dir, "ticket.yaml"), "uriTemplate: tickets://{id}/summary\nmimeType: application/json\ntext: '{\"id\":\"{id}\"}'\n")
	write(t, filepath.Join(dir, "broken.yaml"), "uri: x://broken\n")
	write(t, filepath.Join(dir, "jean2.yaml"), "uri: jean2://workspace/x\ntext: not the workspace's\n")
	write(t, filepath.Join(dir, "escape.yaml"), "uri: x://escape\nfile: passwd\n")
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "passwd")); err != nil {
		t.Fatal(err)
	}

	for _, version := range []string{newest, classic} {
		cs := r.connect(version, nil)
		ctx := context.Background()
		listed := map[string]bool{}
		for res, err := range cs.Resources(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			listed[res.URI] = true
		}
		if !listed["notes://today"] || !listed["img://pixel"] || listed["x://broken"] || listed["x://escape"] || listed["jean2://workspace/x"] {
			t.Fatalf("%s: resources listed %v", version, listed)
		}
		got := read(t, cs, "notes://today")
		if got.Text != "Buy milk." || got.MIMEType != "text/plain" {
			t.Errorf("%s: notes://today read as %s", version, toJSON(got))
		}
		got = read(t, cs, "img://pixel")
		if !bytes.Equal(got.Blob, pngPixel) || got.MIMEType != "image/png" || got.Text != "" {
			t.Errorf("%s: img://pixel read as %s", version, toJSON(got))
		}
		got = read(t, cs, "tickets://123/summary")
		if got.Text != `{"id":"123"}` || got.URI != "tickets://123/summary" {
			t.Errorf("%s: tickets://123/summary read as %s", version, toJSON(got))
		}
		if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "x://escape"}); err == nil {
			t.Errorf("%s: a resource whose file leads out of the folder was read", version)
		}
	}

	updated := make(chan string, 4)
	cs := r.connect(classic, &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
		updated <- req.Params.URI
	}})
	for _, uri := range []string{"notes://today", "tickets://9/summary"} {
		if err := cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatalf("subscribe %s: %v", uri, err)
		}
	}
	if err := cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: "notes://tomorrow"}); err == nil {
		t.Fatal("a subscription to a URI no file offers was taken")
	}
	write(t, filepath.Join(dir, "note.yaml"), "uri: notes://today\ntext: Buy bread.\n")
	select {
	case got := <-updated:
		if got != "notes://today" {
			t.Fatalf("updated %s, want notes://today", got)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no notifications/resources/updated after the resource's file changed")
	}
	if got := read(t, cs, "notes://today"); got.Text != "Buy bread." {
		t.Fatalf("notes://today after the change: %s", toJSON(got))
	}
}

func read(t *testing.T, cs *mcp.ClientSession, uri string) *mcp.ResourceContents {
	t.Helper()
	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatalf("resources/read %s: %v", uri, err)
	}
	if len(res.Contents) != 1 {
		t.Fatalf("resources/read %s: %s", uri, toJSON(res))
	}
	return res.Contents[0]
}

// The YAML files of $JEAN2_HOME/prompts are prompts of several messages: an image file, an
// embedded resource whose URI takes an argument, text; a skill of the same name wins.
func TestSavedPrompts(t *testing.T) {
	r := newRig(t)
	home := r.h.Layout().Home
	dir := filepath.Join(home, "prompts")
	write(t, filepath.Join(dir, "look.yaml"), `description: Look at a page.
arguments:
  - {name: page, required: true, values: [home, help]}
  - {name: p, description: a shorter name}
messages:
  - image: shot.png
  - resource: {uri: "pages://$page", text: "The $page page ($p)."}
  - text: Compare $page with the picture.
    role: assistant
`)
	write(t, filepath.Join(dir, "shot.png"), string(pngPixel))
	write(t, filepath.Join(dir, "plain.yaml"), "messages:\n  - text: the saved one\n")
	write(t, filepath.Join(home, "skills", "plain", "SKILL.md"), "---\ndescription: The skill.\n---\nthe skill\n")
	write(t, filepath.Join(dir, "empty.yaml"), "description: no messages\n")

	for _, version := range []string{newest, classic} {
		cs := r.connect(version, nil)
		got := listPrompts(t, cs)
		if got["look"] == nil || got["plain"] == nil || got["empty"] != nil || got["plain"].Description != "The skill." {
			t.Fatalf("%s: prompts %s", version, toJSON(got))
		}
		res, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "look", Arguments: map[string]string{"page": "help", "p": "x"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) != 3 {
			t.Fatalf("%s: look got %s", version, toJSON(res))
		}
		img, ok := res.Messages[0].Content.(*mcp.ImageContent)
		if !ok || !bytes.Equal(img.Data, pngPixel) || img.MIMEType != "image/png" {
			t.Errorf("%s: message 1 %s", version, toJSON(res.Messages[0]))
		}
		emb, ok := res.Messages[1].Content.(*mcp.EmbeddedResource)
		if !ok || emb.Resource.URI != "pages://help" || emb.Resource.Text != "The help page (x)." || emb.Resource.MIMEType != "text/plain" {
			t.Errorf("%s: message 2 %s", version, toJSON(res.Messages[1]))
		}
		txt, ok := res.Messages[2].Content.(*mcp.TextContent)
		if !ok || txt.Text != "Compare help with the picture." || res.Messages[2].Role != "assistant" {
			t.Errorf("%s: message 3 %s", version, toJSON(res.Messages[2]))
		}
		if _, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "look"}); err == nil || !strings.Contains(err.Error(), "page") {
			t.Errorf("%s: look without its required argument: %v", version, err)
		}
		comp, err := cs.Complete(context.Background(), &mcp.CompleteParams{
			Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "look"},
			Argument: mcp.CompleteParamsArgument{Name: "page", Value: "h"},
		})
		if err != nil || len(comp.Completion.Values) != 2 {
			t.Errorf("%s: completion of page: %s %v", version, toJSON(comp), err)
		}
	}
}

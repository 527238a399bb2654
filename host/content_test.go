package host_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/runtime/gotool"
	"github.com/jean2/jean2/tool"
)

// A tool returns content beyond JSON through the SDK, from a real worker: the host keeps it
// checked, gives the model its text, and shows its images in the tool card (issue 25,
// point 2). Broken content fails the call with an error naming the tool and what is wrong.
func TestRichContentFromAWorker(t *testing.T) {
	f := newFixture(t)
	f.copyTool("rich-content")
	f.start()
	call := func(kind string) host.Outcome {
		t.Helper()
		return f.call("rich-content", `{"kind":"`+kind+`"}`)
	}

	out := call("mixed")
	if !out.Result.Success || len(out.Result.Content) != 3 {
		t.Fatalf("mixed: %+v", out.Result)
	}
	img := out.Result.Content[1]
	if img.Type != tool.ContentImage || img.MIMEType != "image/png" || !strings.HasPrefix(string(img.Bytes()), "\x89PNG") {
		t.Fatalf("image block: %+v", img)
	}
	wantText := "Multiple content types test:\n<resource uri=\"test://embedded-resource\" mimeType=\"text/plain\">\nThis is an embedded resource content.\n</resource>"
	if out.ModelText != wantText {
		t.Fatalf("model text:\n got %q\nwant %q", out.ModelText, wantText)
	}
	var viz struct {
		Type   string `json:"type"`
		Images []struct {
			MIMEType string `json:"mimeType"`
			Data     string `json:"data"`
		} `json:"images"`
	}
	if err := json.Unmarshal(out.Result.Visualization, &viz); err != nil || viz.Type != tool.VizImages || len(viz.Images) != 1 || viz.Images[0].Data != img.Data {
		t.Fatalf("tool card visualization: %s (%v)", out.Result.Visualization, err)
	}

	if out = call("audio"); !out.Result.Success || out.ModelText != "[audio/wav 44 B: not shown to this model]" {
		t.Fatalf("audio: %q %+v", out.ModelText, out.Result)
	}
	if out = call("link"); out.ModelText != "[resource link linked: test://linked, text/plain]" {
		t.Fatalf("link: %q", out.ModelText)
	}
	if out = call("with-result"); out.ModelText != `{"success":true,"result":{"width":1,"height":1}}` || len(out.Result.Content) != 1 {
		t.Fatalf("with-result: %q %+v", out.ModelText, out.Result)
	}

	for kind, want := range map[string]string{
		"bad-base64": "tool rich-content returned unusable content: content[0]: image image/png: data is not valid base64",
		"wrong-type": "tool rich-content returned unusable content: content[0]: the bytes are not a image/png image",
		// A worker's answer is bounded first, by Limits.MaxResultBytes.
		"huge": "tool rich-content: call call_",
	} {
		out := call(kind)
		if out.Result.Success || !strings.Contains(out.Result.Error, want) || out.Result.Content != nil {
			t.Errorf("%s: error %q, want it to contain %q", kind, out.Result.Error, want)
		}
	}
}

// An image too big to keep with the call is written to a file in the session's folder, as an
// overflowing result is, and a link to the file takes its place.
func TestRichContentSpilled(t *testing.T) {
	f := newFixture(t)
	f.copyTool("rich-content")
	f.start()
	out := f.call("rich-content", `{"kind":"big"}`)
	if !out.Result.Success || len(out.Result.Content) != 1 {
		t.Fatalf("big: %+v", out.Result.Error)
	}
	c := out.Result.Content[0]
	if c.Type != tool.ContentResourceLink || !strings.HasPrefix(c.URI, "file://") || c.Size == nil || *c.Size != 5<<20 {
		t.Fatalf("the big image was kept, not spilled: %+v", c.Type)
	}
	data, err := os.ReadFile(strings.TrimPrefix(c.URI, "file://"))
	if err != nil || len(data) != 5<<20 || !strings.HasPrefix(string(data), "\x89PNG") {
		t.Fatalf("spilled file: %d bytes, %v", len(data), err)
	}
	if !strings.Contains(out.ModelText, "too big to keep with the call: written to this file") || !strings.Contains(out.ModelText, c.URI) {
		t.Fatalf("model text: %q", out.ModelText)
	}
}

// goChart is a Go tool folder returning an image through the Go SDK's helpers.
const goChart = `package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"

	"github.com/jean2/jean2/tool"
)

func main() {
	png, _ := base64.StdEncoding.DecodeString("` + redPixelPNG + `")
	t := &tool.Func{Def: tool.Definition{Name: "gochart", Description: "Draw a chart.", InputSchema: json.RawMessage(` + "`" + `{"type":"object"}` + "`" + `)},
		Run: func(context.Context, *tool.Context, json.RawMessage) tool.Result {
			res := tool.Success(map[string]int{"width": 1})
			res.Content = []tool.Content{tool.TextContent("the chart"), tool.ImageContent("image/png", png)}
			return res
		}}
	if err := tool.Serve(t); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
`

const redPixelPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"

// A Go tool returns content through the Go tool package, as a worker the host builds.
func TestRichContentFromAGoTool(t *testing.T) {
	f := newFixture(t)
	files := gotool.Scaffold("gochart")
	files["tool.go"] = goChart
	f.addTool("gochart", files)
	f.opts.ServerEnv = append(f.opts.ServerEnv, "HOME="+os.Getenv("HOME"))
	f.start()
	if e := f.entry("gochart"); e.Status != host.StatusOK {
		t.Fatalf("entry %+v", e)
	}
	out := f.call("gochart", `{}`)
	if !out.Result.Success || len(out.Result.Content) != 2 || out.Result.Content[1].Data != redPixelPNG ||
		out.ModelText != "{\"success\":true,\"result\":{\"width\":1}}\n\nthe chart" {
		t.Fatalf("%q %+v", out.ModelText, out.Result)
	}
}

package mcpclient

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/jean2/jean2/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An MCP tool's images, audio and resources are the result's content, in their order with
// its text, so the host can show the images in the tool card and give them to the model
// (issue 24, points 10 and 15); the card's visualization shows raster images only, under a
// budget, counting the rest.
func TestRichContentKept(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nnot really")
	big := append([]byte("\xff\xd8\xff"), bytes.Repeat([]byte{7}, 768<<10)...)
	r := fromResult(&mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: "a chart"},
		&mcp.ImageContent{MIMEType: "image/png", Data: png},
		&mcp.ImageContent{MIMEType: "image/svg+xml", Data: []byte("<svg onload=alert(1)>")},
		&mcp.ImageContent{MIMEType: "image/jpeg", Data: big},
		&mcp.AudioContent{MIMEType: "audio/wav", Data: []byte("RIFF....WAVE")},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://doc", MIMEType: "text/plain", Text: "inside"}},
		&mcp.ResourceLink{URI: "test://far", Name: "far"},
	}})
	if !r.Success || r.Result != nil || len(r.Content) != 7 {
		t.Fatalf("result = %+v", r)
	}
	if err := tool.CheckContent(r.Content); err != nil {
		t.Fatalf("the host would refuse the content: %v", err)
	}
	want := []string{"text", "image", "image", "image", "audio", "resource", "resource_link"}
	for i, c := range r.Content {
		if c.Type != want[i] {
			t.Fatalf("content[%d] is %s, want %s", i, c.Type, want[i])
		}
	}
	if got := r.Content[1].Bytes(); !bytes.Equal(got, png) {
		t.Fatalf("image bytes = %q", got)
	}
	viz := tool.ImagesVisualization(r.Content)
	if err := tool.CheckVisualization(viz); err != nil {
		t.Fatalf("the host would drop the card's visualization: %v", err)
	}
	var v struct {
		Type   string `json:"type"`
		Images []struct {
			MIMEType string `json:"mimeType"`
			Data     string `json:"data"`
		} `json:"images"`
		Omitted int `json:"omitted"`
	}
	if err := json.Unmarshal(viz, &v); err != nil {
		t.Fatal(err)
	}
	if v.Type != tool.VizImages || len(v.Images) != 1 || v.Images[0].MIMEType != "image/png" ||
		v.Images[0].Data != base64.StdEncoding.EncodeToString(png) || v.Omitted != 2 {
		t.Fatalf("visualization = %s", viz)
	}
	// Structured content stays the result; the images still come along.
	r = fromResult(&mcp.CallToolResult{StructuredContent: map[string]any{"n": 1},
		Content: []mcp.Content{&mcp.TextContent{Text: `{"n":1}`}, &mcp.ImageContent{MIMEType: "image/png", Data: png}}})
	if string(r.Result) != `{"n":1}` || len(r.Content) != 1 || r.Content[0].Type != tool.ContentImage {
		t.Fatalf("structured: %+v", r)
	}
	if r = fromResult(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "x"}}}); r.Content != nil || string(r.Result) != `"x"` {
		t.Fatalf("text only: %+v", r)
	}
}

// The same through a real MCP server imported over HTTP: its image, audio and resource reach
// jean2's result as content, not as "[image … not shown]" lines.
func TestRichContentFromAnImportedServer(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	p := newPeer(t)
	p.srv.AddTool(&mcp.Tool{Name: "chart", Description: "Draws.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "chart:"}, &mcp.ImageContent{MIMEType: "image/png", Data: png},
				&mcp.AudioContent{MIMEType: "audio/wav", Data: []byte("RIFF")},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://b", MIMEType: "application/pdf", Blob: []byte{1, 2}}}}}, nil
		})
	m := New(Config{Servers: []ServerConfig{{Name: "peer", Type: "http", URL: p.url, Timeout: 30, File: "mcp.json"}}}, nil, Options{})
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m.Start(ctx)
	var chart tool.Tool
	waitFor(t, "the chart tool", func() bool {
		tools, _ := m.Sources()[0].Tools()
		for _, tl := range tools {
			if tl.Definition().Name == "mcp__peer__chart" {
				chart = tl
			}
		}
		return chart != nil
	})
	r := run(t, chart, `{}`, nil)
	if !r.Success || len(r.Content) != 4 || r.Content[0].Text != "chart:" || !bytes.Equal(r.Content[1].Bytes(), png) ||
		r.Content[2].MIMEType != "audio/wav" || r.Content[3].Resource == nil || !bytes.Equal(r.Content[3].Bytes(), []byte{1, 2}) {
		t.Fatalf("result: %+v", r)
	}
	if err := tool.CheckContent(r.Content); err != nil {
		t.Fatal(err)
	}
}

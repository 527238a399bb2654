package mcpclient

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/jean2/jean2/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An MCP tool's image is shown in the tool card: without a visualization of the server's
// own, the result carries an images visualization the host accepts; an SVG (which could
// hold script) and an image past the budget are counted, not shown (issue 24, point 10).
func TestImagesShownInTheCard(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nnot really")
	big := bytes.Repeat([]byte{7}, maxShownImageBytes)
	r := fromResult(&mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: "a chart"},
		&mcp.ImageContent{MIMEType: "image/png", Data: png},
		&mcp.ImageContent{MIMEType: "image/svg+xml", Data: []byte("<svg onload=alert(1)>")},
		&mcp.ImageContent{MIMEType: "image/jpeg", Data: big},
	}})
	if !r.Success || r.Visualization == nil {
		t.Fatalf("no visualization for a result with images: %+v", r)
	}
	if err := tool.CheckVisualization(r.Visualization); err != nil {
		t.Fatalf("the host would drop it: %v", err)
	}
	var v struct {
		Type   string `json:"type"`
		Images []struct {
			MIMEType string `json:"mimeType"`
			Data     string `json:"data"`
		} `json:"images"`
		Omitted int `json:"omitted"`
	}
	if err := json.Unmarshal(r.Visualization, &v); err != nil {
		t.Fatal(err)
	}
	if v.Type != tool.VizImages || len(v.Images) != 1 || v.Images[0].MIMEType != "image/png" ||
		v.Images[0].Data != base64.StdEncoding.EncodeToString(png) || v.Omitted != 2 {
		t.Fatalf("visualization = %s", r.Visualization)
	}
	// A server's own visualization wins; text alone makes none.
	r = fromResult(&mcp.CallToolResult{Meta: mcp.Meta{metaVisualization: map[string]any{"type": "none"}},
		Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/png", Data: png}}})
	if string(r.Visualization) != `{"type":"none"}` {
		t.Fatalf("server's visualization replaced: %s", r.Visualization)
	}
	if r = fromResult(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "x"}}}); r.Visualization != nil {
		t.Fatalf("text only: %s", r.Visualization)
	}
}

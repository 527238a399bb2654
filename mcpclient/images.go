package mcpclient

import (
	"encoding/base64"
	"encoding/json"
	"slices"

	"github.com/jean2/jean2/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxShownImageBytes bounds the base64 of the images one result shows people: the host
// refuses a visualization over its limit (host.Limits.MaxVisualizationBytes, 1 MiB by
// default) with the whole result, so the images stay well under it.
const maxShownImageBytes = 768 << 10

// imagesVisualization is the images of an MCP tool's result as an images visualization,
// for the clients' tool cards (what reaches the model is fromResult's business); nil when
// there are none. Images of a type browsers cannot draw safely, or past the budget, are
// counted in "omitted" rather than shown.
func imagesVisualization(content []mcp.Content) json.RawMessage {
	type image struct {
		MIMEType string `json:"mimeType"`
		Data     string `json:"data"`
	}
	var shown []image
	omitted, budget := 0, maxShownImageBytes
	for _, c := range content {
		img, ok := c.(*mcp.ImageContent)
		if !ok {
			continue
		}
		data := base64.StdEncoding.EncodeToString(img.Data)
		if !slices.Contains(tool.ImageTypes, img.MIMEType) || len(data) > budget {
			omitted++
			continue
		}
		budget -= len(data)
		shown = append(shown, image{MIMEType: img.MIMEType, Data: data})
	}
	if len(shown) == 0 && omitted == 0 {
		return nil
	}
	if shown == nil {
		shown = []image{}
	}
	raw, err := json.Marshal(map[string]any{"type": tool.VizImages, "images": shown, "omitted": omitted})
	if err != nil {
		return nil
	}
	return raw
}

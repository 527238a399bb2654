package mcpserver_test

import (
	"bytes"
	"encoding/base64"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// richTool is a jean2 tool (run by a real worker) returning content beyond JSON, as the MCP
// conformance suite's tools-call-image, -audio, -embedded-resource and -mixed-content
// scenarios ask for.
const richTool = `
const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC';
export const definition = {
  name: 'rich', description: 'Rich content.',
  inputSchema: { type: 'object', properties: { kind: { type: 'string' } }, required: ['kind'] },
};
export async function execute({ kind }) {
  const image = { type: 'image', data: png, mimeType: 'image/png' };
  const resource = { type: 'resource', resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } };
  switch (kind) {
    case 'mixed': return { success: true, content: [{ type: 'text', text: 'Multiple content types test:' }, image, resource] };
    case 'audio': return { success: true, content: [{ type: 'audio', data: 'UklGRiQAAABXQVZF', mimeType: 'audio/wav' }] };
    case 'both': return { success: true, result: { n: 1 }, content: [{ type: 'resource_link', uri: 'test://far', name: 'far' }] };
    case 'bad': return { success: true, content: [{ type: 'image', data: '%%%', mimeType: 'image/png' }] };
  }
}
`

// A jean2 tool's content reaches an MCP client as MCP content: text, image, audio, embedded
// resource and resource link blocks in the tool's order, after the result's own text when
// it has one; broken content is an error result naming the tool (issue 25, point 2).
func TestRichContentToMCP(t *testing.T) {
	r := newRig(t, func(r *rig) { r.folders = map[string]string{"rich": richTool} })
	cs := r.connect("", nil)

	res := call(t, cs, "rich", map[string]any{"kind": "mixed"})
	if res.IsError || len(res.Content) != 3 {
		t.Fatalf("mixed: %s", toJSON(res))
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "Multiple content types test:" {
		t.Fatalf("content[0] = %s", toJSON(res.Content[0]))
	}
	img, ok := res.Content[1].(*mcp.ImageContent)
	if !ok || img.MIMEType != "image/png" || !bytes.HasPrefix(img.Data, []byte("\x89PNG")) {
		t.Fatalf("content[1] = %s", toJSON(res.Content[1]))
	}
	er, ok := res.Content[2].(*mcp.EmbeddedResource)
	if !ok || er.Resource.URI != "test://embedded-resource" || er.Resource.MIMEType != "text/plain" || er.Resource.Text == "" {
		t.Fatalf("content[2] = %s", toJSON(res.Content[2]))
	}

	res = call(t, cs, "rich", map[string]any{"kind": "audio"})
	au, ok := res.Content[0].(*mcp.AudioContent)
	if res.IsError || len(res.Content) != 1 || !ok || au.MIMEType != "audio/wav" || base64.StdEncoding.EncodeToString(au.Data) != "UklGRiQAAABXQVZF" {
		t.Fatalf("audio: %s", toJSON(res))
	}

	res = call(t, cs, "rich", map[string]any{"kind": "both"})
	if res.IsError || len(res.Content) != 2 || text(res) != `{"success":true,"result":{"n":1}}` {
		t.Fatalf("result and content: %s", toJSON(res))
	}
	if l, ok := res.Content[1].(*mcp.ResourceLink); !ok || l.URI != "test://far" || l.Name != "far" {
		t.Fatalf("content[1] = %s", toJSON(res.Content[1]))
	}

	res = call(t, cs, "rich", map[string]any{"kind": "bad"})
	if !res.IsError || !bytes.Contains([]byte(text(res)), []byte("tool rich returned unusable content: content[0]: image image/png: data is not valid base64")) {
		t.Fatalf("bad content: %s", toJSON(res))
	}
}

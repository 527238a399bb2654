package mcpclient

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jean2/jean2/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// metaVisualization is where jean2's MCP server puts a visualization; a tool re-imported
// from another jean2 keeps it.
const metaVisualization = "jean2/visualization"

// remoteTool is one tool of an MCP server, called with tools/call.
type remoteTool struct {
	srv    *Server
	remote string // the server's name for it
	def    tool.Definition
}

func (t *remoteTool) Definition() tool.Definition { return t.def }

// definition makes a jean2 definition of an MCP tool: a name jean2 accepts, a description
// the model can read, the schemas and hints, and the server's call timeout.
func (s *Server) definition(t *mcp.Tool) tool.Definition {
	def := tool.Definition{
		Name:        QualifiedName(s.cfg.Name, t.Name),
		Title:       t.Title,
		Description: t.Description,
		Timeout:     s.cfg.Timeout,
	}
	if def.Description == "" {
		def.Description = fmt.Sprintf("Tool %s of the MCP server %s.", t.Name, s.cfg.Name)
	}
	def.InputSchema = InputSchema(t)
	if t.OutputSchema != nil {
		if out, err := json.Marshal(t.OutputSchema); err == nil {
			def.OutputSchema = out
		}
	}
	if a := t.Annotations; a != nil {
		if def.Title == "" {
			def.Title = a.Title
		}
		def.Annotations = &tool.Annotations{
			ReadOnlyHint: &a.ReadOnlyHint, DestructiveHint: a.DestructiveHint,
			IdempotentHint: &a.IdempotentHint, OpenWorldHint: a.OpenWorldHint,
		}
	}
	return def
}

// InputSchema is the input schema jean2 keeps for an MCP tool: the server's as it wrote it
// (the go-sdk client decodes it into plain JSON values, so 2020-12 keywords — $schema, $defs,
// $anchor, $ref left unresolved, allOf, if/then/else — all stay), or an empty object schema.
func InputSchema(t *mcp.Tool) json.RawMessage {
	if in, err := json.Marshal(t.InputSchema); err == nil && string(in) != "null" {
		return in
	}
	return json.RawMessage(`{"type":"object"}`)
}

// MaxToolName is the longest name jean2 offers an MCP tool under: OpenAI and Gemini take
// function names of at most 64 characters (Anthropic 128).
const MaxToolName = 64

// QualifiedName is the name jean2 offers the tool of an MCP server under, to the model, in
// `jean2 tools list` and to its clients: mcp__<server>__<tool>, the form Claude Code uses.
// The prefix keeps an imported tool from sitting beside a built-in under a near-identical
// name (read_file next to read-file) and says where it comes from. Characters providers
// refuse ([^A-Za-z0-9_-], the dot included: OpenAI refuses it) become '_'; a name over
// MaxToolName is cut and ends with a hash of the whole, so two long names stay apart.
func QualifiedName(server, tool string) string {
	name := "mcp__" + safeToolChars(server) + "__" + safeToolChars(tool)
	if len(name) <= MaxToolName {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	suffix := "_" + hex.EncodeToString(sum[:4])
	return name[:MaxToolName-len(suffix)] + suffix
}

// safeToolChars replaces the characters a provider refuses in a function name.
func safeToolChars(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "_"
	}
	return string(b)
}

// Remote names the tool as its server does: the server's name in mcp.json and the tool's
// own name, for a caller that names it differently (a workspace's, qualified further).
func (t *remoteTool) Remote() (server, tool string) { return t.srv.cfg.Name, t.remote }

// Execute calls the tool on the server. The call's timeout and the caller's cancellation
// reach the server as notifications/cancelled.
func (t *remoteTool) Execute(ctx context.Context, c *tool.Context, args json.RawMessage) tool.Result {
	t.srv.mu.Lock()
	cs, why := t.srv.session, t.srv.err
	t.srv.mu.Unlock()
	if cs == nil {
		if why == nil {
			why = errors.New("not connected")
		}
		return tool.Errorf("%v", why)
	}
	timeout := t.def.TimeoutDuration()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	clock := startCallClock(timeout, func() { cancel(errCallTimedOut) })
	defer clock.stop()
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	params := &mcp.CallToolParams{Name: t.remote, Arguments: args}
	if c != nil {
		// While it runs, this call answers the server's own requests (requests.go), with
		// its clock stopped while a person is asked.
		if c.Asker != nil {
			cc := *c
			cc.Asker = callAsker{Asker: c.Asker, clock: clock, call: ctx, pending: new(atomic.Int64)}
			c = &cc
		}
		defer t.srv.callers.add(c)()
	}
	var token string
	if c != nil && c.Progress != nil {
		token = fmt.Sprintf("jean2-%d", t.srv.nextToken.Add(1))
		t.srv.progress.Store(token, progressBudget(c.Progress))
		defer t.srv.progress.Delete(token)
		params.SetProgressToken(token)
	}
	var res *mcp.CallToolResult
	var err error
	if ht := t.srv.httpTasks.Load(); ht != nil && ht.requires(t.remote) {
		res, err = ht.call(ctx, t.remote, args, token)
	} else {
		res, err = cs.CallTool(ctx, params)
	}
	if err != nil {
		if ctx.Err() != nil {
			t.srv.lastCancel.Store(time.Now().UnixNano())
		}
		switch {
		case errors.Is(context.Cause(ctx), errCallTimedOut):
			return tool.Errorf("Tool execution timed out after %dms", timeout.Milliseconds())
		case ctx.Err() != nil:
			return tool.Errorf("the call was cancelled: %v", context.Cause(ctx))
		}
		if e := t.srv.tooLarge.Load(); e != nil {
			return tool.Errorf("tools/call %s: %v", t.remote, e)
		}
		return tool.Errorf("MCP server %s: tools/call %s: %v", t.srv.cfg.Name, t.remote, err)
	}
	return fromResult(res)
}

// fromResult turns an MCP result into a jean2 result: the structured content when there is
// some, else the text joined; isError makes a failure whose error is the text. Images,
// audio and resources are the result's content (tool.Content), which the host shows in the
// tool card and gives the model as it can take them; with no structured content, a result
// that is not all text is content throughout, so its text keeps its place among them.
func fromResult(res *mcp.CallToolResult) tool.Result {
	var parts []string
	var content []tool.Content
	rich := false
	for _, c := range res.Content {
		b := toContent(c)
		if b.Type == "" {
			continue
		}
		if b.Type == tool.ContentText {
			parts = append(parts, b.Text)
		} else {
			rich = true
		}
		content = append(content, b)
	}
	text := strings.Join(parts, "\n")
	if res.IsError {
		if text == "" {
			text = "the MCP tool reported an error without a message"
		}
		return tool.Result{Success: false, Error: text, Content: nonText(content)}
	}
	out := tool.Result{Success: true}
	if res.StructuredContent != nil {
		if raw, err := json.Marshal(res.StructuredContent); err == nil {
			out.Result = raw
			out.Content = nonText(content)
		}
	}
	if out.Result == nil {
		if rich {
			out.Content = content
		} else {
			out.Result, _ = json.Marshal(text)
		}
	}
	if v, ok := res.Meta[metaVisualization]; ok {
		if raw, err := json.Marshal(v); err == nil {
			out.Visualization = raw
		}
	}
	return out
}

// toContent is an MCP content block as jean2's; an image whose bytes are not of its type
// becomes a line saying so, as the host would refuse the whole result for it. Empty Type:
// a block jean2 does not know.
func toContent(c mcp.Content) tool.Content {
	switch c := c.(type) {
	case *mcp.TextContent:
		return tool.TextContent(c.Text)
	case *mcp.ImageContent:
		if err := tool.SniffImage(c.MIMEType, c.Data); err != nil || !strings.HasPrefix(c.MIMEType, "image/") || len(c.Data) == 0 {
			return tool.TextContent(fmt.Sprintf("[an image the server sent as %s that is not one: not shown]", c.MIMEType))
		}
		return tool.ImageContent(c.MIMEType, c.Data)
	case *mcp.AudioContent:
		if !strings.HasPrefix(c.MIMEType, "audio/") || len(c.Data) == 0 {
			return tool.TextContent(fmt.Sprintf("[audio the server sent as %q with %d bytes: not usable]", c.MIMEType, len(c.Data)))
		}
		return tool.AudioContent(c.MIMEType, c.Data)
	case *mcp.ResourceLink:
		return tool.Content{Type: tool.ContentResourceLink, URI: c.URI, Name: cmpOr(c.Name, c.URI), Title: c.Title,
			Description: c.Description, MIMEType: c.MIMEType, Size: c.Size}
	case *mcp.EmbeddedResource:
		r := c.Resource
		switch {
		case r == nil || r.URI == "":
			return tool.Content{}
		case r.Blob != nil:
			return tool.EmbeddedBlob(r.URI, r.MIMEType, r.Blob)
		default:
			return tool.EmbeddedText(r.URI, r.MIMEType, r.Text)
		}
	}
	return tool.Content{}
}

// nonText is content without its text blocks (said elsewhere in the result); nil if none.
func nonText(content []tool.Content) []tool.Content {
	var out []tool.Content
	for _, c := range content {
		if c.Type != tool.ContentText {
			out = append(out, c)
		}
	}
	return out
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/llm"
	"github.com/jean2/jean2/tool"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MetaVisualization is the _meta key of a result's visualization.
const MetaVisualization = "jean2/visualization"

// MetaOverflow is the _meta key that says where an overflowing result was written in full.
const MetaOverflow = "jean2/overflow"

// handler runs one tool's calls. def is the definition the tool was listed with.
func (s *Server) handler(def tool.Definition) mcp.ToolHandler {
	var output *tool.Schema
	if out, err := objectSchema(def.OutputSchema, false); err == nil && out != nil {
		output, _ = tool.CompileSchema(out)
	}
	finish := func(out host.Outcome) *mcp.CallToolResult { return toResult(out, output) }
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.Params.RequestState != "" {
			return s.rounds.resume(ctx, req)
		}
		ch := &channel{}
		var p peer = classicPeer{ch: ch}
		var parked *parkedCall
		if usesRounds(req.Session) {
			parked = s.rounds.newCall(def.Name, ch, finish)
			p = parked
		}
		call := s.hostCall(req, def, ch, p)
		if t := taskOf(ctx); t != nil {
			t.follow(&call)
		}
		if parked != nil {
			return s.rounds.start(ctx, req, parked, func(ctx context.Context) host.Outcome { return s.h.Invoke(ctx, call) })
		}
		ch.enter(ctx, req)
		defer ch.leave()
		return finish(s.h.Invoke(ctx, call)), nil
	}
}

// hostCall is the call as the host runs it, with the client standing in for a person and,
// when the host has no model, for the model.
func (s *Server) hostCall(req *mcp.CallToolRequest, def tool.Definition, ch *channel, p peer) host.Call {
	sess := s.session(req.Session)
	args := req.Params.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	caps := clientCaps(req.Session)
	now := s.serving.Load()
	call := host.Call{
		Tool: def.Name, Args: args, SessionID: sess.id, Session: sess.facts,
		Workspace:  now.workspace,
		Asker:      &elicitAsker{peer: p, canElicit: caps.Elicitation != nil, policy: now.policy},
		Progress:   ch.progress,
		LogHandler: &logHandler{ch: ch, logger: def.Name},
	}
	if caps.Sampling != nil {
		switch {
		case !s.h.HasLLM():
			call.LLM = llm.FromText(samplingModel{peer: p})
		case s.opts.LLM != nil:
			call.LLM = llm.FromText(orSampling{first: s.opts.LLM, then: samplingModel{peer: p}})
		}
	}
	return call
}

// clientCaps are the capabilities the client declared (none when it declared nothing).
func clientCaps(ss *mcp.ServerSession) mcp.ClientCapabilities {
	if ss == nil {
		return mcp.ClientCapabilities{} // a stateless fast call: only one that declared neither elicitation nor sampling
	}
	if p := ss.InitializeParams(); p != nil && p.Capabilities != nil {
		return *p.Capabilities
	}
	return mcp.ClientCapabilities{}
}

// usesRounds reports whether the client speaks protocol revision 2026-07-28 or later, where
// a server asks for input by returning input requests rather than sending requests.
// A call with no session is a stateless fast call (httpstateless.go), on 2026-07-28 or later.
func usesRounds(ss *mcp.ServerSession) bool {
	if ss == nil {
		return true
	}
	p := ss.InitializeParams()
	return p != nil && p.ProtocolVersion >= "2026-07-28"
}

// toResult turns an outcome into an MCP result: the model's text (or the tool's content,
// richContent), the result as structured content when the tool has an output schema, the
// visualization in _meta.
func toResult(out host.Outcome, output *tool.Schema) *mcp.CallToolResult {
	res := &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: out.ModelText}},
		IsError: !out.Result.Success,
	}
	if len(out.Result.Content) > 0 {
		res.Content = richContent(out)
	}
	meta := mcp.Meta{}
	if len(out.Result.Visualization) > 0 {
		meta[MetaVisualization] = json.RawMessage(out.Result.Visualization)
	}
	if out.Overflow != nil {
		meta[MetaOverflow] = out.Overflow
	}
	if len(meta) > 0 {
		res.Meta = meta
	}
	if output != nil && out.Result.Success {
		// A client checks structured content against the output schema and refuses the
		// whole result when it does not match, so a mismatch is reported here instead.
		result := out.Result.Result
		if len(result) == 0 {
			result = json.RawMessage("null")
		}
		if err := output.Validate(result); err != nil {
			res.IsError = true
			res.Content = append(res.Content, &mcp.TextContent{Text: fmt.Sprintf("tool %s returned a result that does not match its outputSchema: %v", out.Tool, err)})
			return res
		}
		res.StructuredContent = json.RawMessage(result)
	}
	return res
}

// errUnknownState answers a retry whose requestState names no parked call.
func errUnknownState(state string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("requestState %.40q names no call waiting for input (it finished, was cancelled, or waited too long): call the tool again", state)}
}

// richContent is the content of a result that has some (tool.Content), as MCP content: the
// result's own text first when there is any (its JSON, error or summary), then each block
// as the tool gave it.
func richContent(out host.Outcome) []mcp.Content {
	var content []mcp.Content
	own := out.Result
	own.Content = nil
	if own.Result != nil || own.Error != "" || own.Summary != "" {
		text, _ := own.ModelText()
		content = append(content, &mcp.TextContent{Text: string(text)})
	}
	for _, c := range out.Result.Content {
		if m := mcpContent(c); m != nil {
			content = append(content, m)
		}
	}
	return content
}

// mcpContent is one checked block as MCP content.
func mcpContent(c tool.Content) mcp.Content {
	switch c.Type {
	case tool.ContentText:
		return &mcp.TextContent{Text: c.Text}
	case tool.ContentImage:
		return &mcp.ImageContent{MIMEType: c.MIMEType, Data: c.Bytes()}
	case tool.ContentAudio:
		return &mcp.AudioContent{MIMEType: c.MIMEType, Data: c.Bytes()}
	case tool.ContentResourceLink:
		return &mcp.ResourceLink{URI: c.URI, Name: c.Name, Title: c.Title, Description: c.Description, MIMEType: c.MIMEType, Size: c.Size}
	case tool.ContentResource:
		r := &mcp.ResourceContents{URI: c.Resource.URI, MIMEType: c.Resource.MIMEType, Text: c.Resource.Text}
		if c.Resource.Blob != "" {
			r.Blob = c.Bytes()
		}
		return &mcp.EmbeddedResource{Resource: r}
	}
	return nil
}

package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

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
	finish := func(out host.Outcome) (*mcp.CallToolResult, error) {
		if pe := out.Result.ProtocolError; pe != nil {
			return nil, &jsonrpc.Error{Code: pe.Code, Message: pe.Message, Data: pe.Data}
		}
		s.offerOverflow(out)
		return toResult(out, output), nil
	}
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.Params.RequestState != "" {
			return s.rounds.resume(ctx, req)
		}
		ch := &channel{}
		var p peer = classicPeer{ch: ch}
		var parked *parkedCall
		switch t := taskOf(ctx); {
		case t != nil && t.inputs != nil:
			p = inputPeer{t.inputs.ask} // a task of the extension: its asks wait for tasks/update
		case usesRounds(req.Session):
			parked = s.rounds.newCall(def.Name, ch, finish, req.Params.InputResponses)
			p = inputPeer{parked.ask}
		}
		call, missing := s.hostCall(req, def, ch, p)
		if t := taskOf(ctx); t != nil {
			t.follow(&call)
		}
		invoke := func(ctx context.Context) host.Outcome {
			out := s.h.Invoke(ctx, call)
			s.notifyChanged(context.WithoutCancel(ctx), call.Workspace.Path, call.Ledger)
			return out
		}
		if parked != nil {
			res, err := s.rounds.start(ctx, req, parked, invoke)
			return missing.answer(res, err)
		}
		ch.enter(ctx, req)
		defer ch.leave()
		return missing.answer(finish(invoke(ctx)))
	}
}

// hostCall is the call as the host runs it, with the client standing in for a person and,
// when the host has no model, for the model. missing records whether the call needed a
// capability the client did not declare.
func (s *Server) hostCall(req *mcp.CallToolRequest, def tool.Definition, ch *channel, p peer) (call host.Call, missing *missingSampling) {
	sess := s.session(req)
	args := req.Params.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	caps := requestCaps(req)
	now := s.serving.Load()
	call = host.Call{
		Tool: def.Name, Args: args, SessionID: sess.id, Session: sess.facts,
		Ledger:     tool.NewLedger(), // read after the call for the files it changed (notifyChanged)
		Workspace:  now.workspace,
		Asker:      &elicitAsker{peer: p, canElicit: caps.Elicitation != nil, canRoots: caps.RootsV2 != nil, policy: now.policy},
		Progress:   ch.progress,
		LogHandler: &logHandler{ch: ch, logger: def.Name},
	}
	if sess.id == "" && call.Workspace.ID == "" {
		// Stateless: the server's stateless calls share a temporary folder and its workers
		// (in a stored workspace, its own sessionless calls' folder).
		call.TempScope = s.statelessScope
		s.statelessUsed.Store(true)
	}
	var client llm.TextGenerator = samplingModel{peer: p}
	if caps.Sampling == nil {
		if !usesRounds(req.Session) {
			return call, nil // the host's model, or its "none configured"
		}
		missing = &missingSampling{}
		client = missing
	}
	switch {
	case !s.h.HasLLM():
		call.LLM = llm.FromText(client)
	case s.opts.LLM != nil:
		call.LLM = llm.FromText(orSampling{first: s.opts.LLM, then: client})
	}
	return call, missing
}

// missingSampling stands in for the client's model on 2026-07-28 or later when the client
// declared no sampling and the host has no model: ctx.llm fails as with no model at all,
// and a call that then fails is answered with MissingRequiredClientCapabilityError
// (-32021, SEP-2575) naming sampling, so the client learns what to declare instead of
// reading a tool error. A tool that copes without the model answers as usual.
type missingSampling struct{ needed atomic.Bool }

func (m *missingSampling) GenerateText(context.Context, tool.TextRequest) (string, error) {
	m.needed.Store(true)
	return "", fmt.Errorf("%w, and the MCP client declared no sampling capability for its own model to answer", tool.ErrNoLLM)
}

// answer is the call's answer: as it is, unless the call failed after needing sampling.
func (m *missingSampling) answer(res *mcp.CallToolResult, err error) (*mcp.CallToolResult, error) {
	if m == nil || err != nil || res == nil || !res.IsError || !m.needed.Load() {
		return res, err
	}
	return nil, &jsonrpc.Error{
		Code:    mcp.CodeMissingRequiredClientCapabilities,
		Message: "the tool needs a model: jean2 has none configured, and the client did not declare the sampling capability",
		Data:    json.RawMessage(`{"requiredCapabilities":{"sampling":{}}}`),
	}
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

// requestCaps are the capabilities the client declared for req: its session's, or on the
// stateless wire with no session (a fast call, a task of the extension) its _meta's.
func requestCaps(req *mcp.CallToolRequest) mcp.ClientCapabilities {
	if req.Session != nil {
		return clientCaps(req.Session)
	}
	return metaCaps(req.Params.Meta)
}

// metaCaps decodes the clientCapabilities of a request's _meta (none when it has none).
func metaCaps(meta mcp.Meta) mcp.ClientCapabilities {
	var caps mcp.ClientCapabilities
	raw, ok := meta[mcp.MetaKeyClientCapabilities]
	if !ok {
		return caps
	}
	b, err := json.Marshal(raw)
	if err == nil {
		_ = json.Unmarshal(b, &caps) // a shape that does not decode declares nothing
	}
	return caps
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

package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/jean2/jean2/ask"
	"github.com/jean2/jean2/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An imported server may ask jean2 things while one of its tools runs: a form or a page to
// open (elicitation), the model (sampling). jean2 answers them through the call that is
// running: its ctx.ask reaches the person (the web client, the terminal, or jean2's own MCP
// client), its ctx.llm is the session's provider. A request is routed to the most recent
// call of that server still running; with none running (a server asking out of the blue)
// it is declined, since nobody is there to answer.

// callers are the calls of one server now running, newest last.
type callers struct {
	mu    sync.Mutex
	calls []*tool.Context
}

func (c *callers) add(tc *tool.Context) (remove func()) {
	c.mu.Lock()
	c.calls = append(c.calls, tc)
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, x := range c.calls {
			if x == tc {
				c.calls = append(c.calls[:i], c.calls[i+1:]...)
				return
			}
		}
	}
}

// current is the newest running call that can ask, nil when none can.
func (c *callers) current() *tool.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.calls) - 1; i >= 0; i-- {
		if c.calls[i].Asker != nil {
			return c.calls[i]
		}
	}
	return nil
}

// elicitThroughAsks answers a server's elicitation with an ask of the call running.
func (s *Server) elicitThroughAsks(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	tc := s.callers.current()
	if tc == nil {
		if s.logs.allow(s.log, s.cfg.Name) {
			s.log.Info("MCP server asked with no call running: declined", "server", s.cfg.Name, "message", cutLogText(req.Params.Message))
		}
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	p := req.Params
	if p.Mode == "url" {
		page, err := webPage(p.URL)
		if err != nil {
			// Not shown to anyone: a person shown it could follow it.
			if s.logs.allow(s.log, s.cfg.Name) {
				s.log.Warn("MCP server asked to open a page that is not one: declined", "server", s.cfg.Name, "error", cutLogText(err.Error()))
			}
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		q := fmt.Sprintf("The MCP server %s asks you to open a page of %s: %s", s.cfg.Name, page.Host, p.URL)
		ans, err := tc.Asker.Ask(ctx, tool.Ask{Type: tool.AskConfirm, Question: q, Description: p.Message + "\n\nOpen it yourself, finish there, then answer yes (no declines)."})
		if err != nil {
			return answerError(err), nil
		}
		if string(ans) == "true" {
			return &mcp.ElicitResult{Action: "accept"}, nil
		}
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	form, fields, err := formFromSchema(s.cfg.Name, p.Message, p.RequestedSchema)
	if err != nil {
		if s.logs.allow(s.log, s.cfg.Name) {
			s.log.Warn("MCP server's elicitation cannot be asked", "server", s.cfg.Name, "error", cutLogText(err.Error()))
		}
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	raw, err := tc.Asker.Ask(ctx, form)
	if err != nil {
		return answerError(err), nil
	}
	content, err := contentFromAnswers(raw, fields)
	if err != nil {
		return nil, fmt.Errorf("the answer to MCP server %s's elicitation: %w", s.cfg.Name, err)
	}
	return &mcp.ElicitResult{Action: "accept", Content: content}, nil
}

// webPage accepts the address of a URL-mode elicitation only when it is a web page a person
// may open and read for what it is: http or https, a host, no user info (which puts a
// trusted-looking name before the real host: https://accounts.example.com@evil.example/),
// and no control, format (bidi) or space characters, which can break or reorder the
// question's lines. Anything else (javascript:, file:, data:, an application's scheme) is
// declined without asking.
func webPage(raw string) (*url.URL, error) {
	for _, r := range raw {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.IsSpace(r) {
			return nil, fmt.Errorf("the address %q holds the character %U", raw, r)
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("the address %q is not a URL: %w", raw, err)
	}
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return nil, fmt.Errorf("the address %q is not an http or https page", raw)
	case u.User != nil:
		return nil, fmt.Errorf("the address %q names a user before its host %s", raw, u.Host)
	case u.Hostname() == "":
		return nil, fmt.Errorf("the address %q names no host", raw)
	}
	return u, nil
}

// answerError is the elicitation result of an ask that was not answered: a person who said
// no declines, anything else (dismissed, timed out, the call ended) cancels.
func answerError(err error) *mcp.ElicitResult {
	if strings.Contains(err.Error(), tool.UserRejection) {
		return &mcp.ElicitResult{Action: "decline"}
	}
	return &mcp.ElicitResult{Action: "cancel"}
}

// field is one property of a requested schema and how its answer becomes its value.
type field struct {
	name string
	kind string // string, number, integer, boolean, enum, enums
}

// formFromSchema makes a form ask of an elicitation's flat object schema (MCP allows
// strings, numbers, booleans and enums, one level deep): booleans become confirms, enums
// selects, numbers number questions, strings text with the default kept.
func formFromSchema(server, message string, schema any) (tool.Ask, []field, error) {
	var s struct {
		Properties map[string]elicitProperty `json:"properties"`
	}
	raw, _ := json.Marshal(schema)
	if err := json.Unmarshal(raw, &s); err != nil {
		return tool.Ask{}, nil, fmt.Errorf("requestedSchema is not an object schema: %w", err)
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	ask := tool.Ask{Type: tool.AskForm, Question: fmt.Sprintf("The MCP server %s asks: %s", server, message)}
	var fields []field
	for _, n := range names {
		q, f, err := questionOf(n, s.Properties[n])
		if err != nil {
			return tool.Ask{}, nil, err
		}
		ask.Questions = append(ask.Questions, q)
		fields = append(fields, f)
	}
	if len(fields) == 0 {
		// Nothing to fill in: the question is a confirmation.
		ask.Questions = []tool.Ask{{Type: tool.AskConfirm, Question: "Go ahead?"}}
		fields = []field{{name: "", kind: "boolean"}}
	}
	return ask, fields, nil
}

// elicitProperty is one property of an elicitation's requested schema, as far as a form
// reads it.
type elicitProperty struct {
	Type        string         `json:"type"`
	Title       string         `json:"title"`
	Description string         `json:"description"`
	Default     any            `json:"default"`
	Minimum     *float64       `json:"minimum"`
	Maximum     *float64       `json:"maximum"`
	Enum        []any          `json:"enum"`
	EnumNames   []string       `json:"enumNames"`
	OneOf       []titledChoice `json:"oneOf"`
	Items       *struct {
		Enum  []any          `json:"enum"`
		AnyOf []titledChoice `json:"anyOf"`
	} `json:"items"`
}

// titledChoice is a choice of a titled enum (oneOf, items.anyOf).
type titledChoice struct {
	Const any    `json:"const"`
	Title string `json:"title"`
}

// choiceOption is a choice as an ask's option: its title (else the value) and its value.
func choiceOption(v any, title string) tool.Option {
	b, _ := json.Marshal(v)
	if title == "" {
		title = fmt.Sprint(v)
	}
	return tool.Option{Label: title, Value: b}
}

// questionOf is property n as a question of the form, and how its answer is read back.
func questionOf(n string, p elicitProperty) (tool.Ask, field, error) {
	label := p.Title
	if label == "" {
		label = n
	}
	q := tool.Ask{Question: label, Description: p.Description, Name: n}
	f := field{name: n, kind: p.Type}
	switch {
	case len(p.Enum) > 0 || len(p.OneOf) > 0:
		q.Type, f.kind = tool.AskSingleSelect, "enum"
		for i, v := range p.Enum {
			title := ""
			if i < len(p.EnumNames) { // the legacy titled enum (before MCP 2025-11-25)
				title = p.EnumNames[i]
			}
			q.Options = append(q.Options, choiceOption(v, title))
		}
		for _, o := range p.OneOf {
			q.Options = append(q.Options, choiceOption(o.Const, o.Title))
		}
	case p.Type == "array" && p.Items != nil:
		q.Type, f.kind = tool.AskMultiSelect, "enums"
		for _, v := range p.Items.Enum {
			q.Options = append(q.Options, choiceOption(v, ""))
		}
		for _, o := range p.Items.AnyOf {
			q.Options = append(q.Options, choiceOption(o.Const, o.Title))
		}
	case p.Type == "boolean":
		q.Type = tool.AskConfirm
	case p.Type == "number" || p.Type == "integer":
		q.Type, q.Integer, q.Minimum, q.Maximum = tool.AskNumber, p.Type == "integer", p.Minimum, p.Maximum
	case p.Type == "string" || p.Type == "":
		q.Type = tool.AskText
		if f.kind == "" {
			f.kind = "string"
		}
	default:
		return q, f, fmt.Errorf("property %q has type %q, which an elicitation form cannot hold", n, p.Type)
	}
	if p.Default != nil {
		q.DefaultValue, _ = json.Marshal(p.Default)
		if q.Type == tool.AskText {
			q.DefaultValue, _ = json.Marshal(fmt.Sprint(p.Default))
		}
	}
	return q, f, nil
}

// contentFromAnswers turns a form's answers back into the values of the requested schema.
func contentFromAnswers(raw json.RawMessage, fields []field) (map[string]any, error) {
	var form tool.FormResponse
	if err := json.Unmarshal(raw, &form); err != nil {
		return nil, fmt.Errorf("not a form answer: %w", err)
	}
	if len(form.Answers) != len(fields) {
		return nil, fmt.Errorf("%d answers for %d fields", len(form.Answers), len(fields))
	}
	content := map[string]any{}
	for i, f := range fields {
		if f.name == "" {
			continue
		}
		var v any
		if err := json.Unmarshal(form.Answers[i].Answer, &v); err != nil {
			return nil, err
		}
		switch f.kind {
		case "number", "integer":
			n, ok := v.(float64)
			if s, text := v.(string); text { // an answerer that typed it as text
				var err error
				if n, err = strconv.ParseFloat(strings.TrimSpace(s), 64); err != nil {
					return nil, fmt.Errorf("%s: %q is not a number", f.name, s)
				}
				ok = true
			}
			if !ok {
				return nil, fmt.Errorf("%s: %v is not a number", f.name, v)
			}
			if f.kind == "integer" && n != float64(int64(n)) {
				return nil, fmt.Errorf("%s: %v is not a whole number", f.name, n)
			}
			v = n
		}
		content[f.name] = v
	}
	return content, nil
}

// sampleThroughProvider answers a server's sampling/createMessage with the model of the
// call running, once the person allowed that server to use it (a permission ask; "this
// session" or "this workspace" remembers it as every grant is).
func (s *Server) sampleThroughProvider(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	tc := s.callers.current()
	if tc == nil || tc.LLM == nil {
		return nil, fmt.Errorf("jean2 declines sampling from MCP server %s: no call of it is running, so nobody can allow it", s.cfg.Name)
	}
	p := req.Params
	var prompt strings.Builder
	for _, m := range p.Messages {
		if t, ok := m.Content.(*mcp.TextContent); ok {
			if prompt.Len() > 0 {
				prompt.WriteString("\n\n")
			}
			if m.Role == "assistant" {
				prompt.WriteString("(assistant) ")
			}
			prompt.WriteString(t.Text)
		} else {
			return nil, fmt.Errorf("jean2 samples text only; MCP server %s sent %T", s.cfg.Name, m.Content)
		}
	}
	// The person sees what the model would be told: the messages and the server's own
	// instructions (a system prompt is where a hostile server hides what it wants).
	desc := "It asks: " + excerptOf(prompt.String(), 300)
	if p.SystemPrompt != "" {
		desc += "\n\nIts instructions to the model: " + excerptOf(p.SystemPrompt, 300)
	}
	allowed, err := tc.Asker.Ask(ctx, tool.Ask{
		// Only a person grants it (ask.Assess): no unattended policy lets a server spend the
		// person's provider.
		Type: tool.AskPermission, Risk: "high", Resource: ask.SamplingResource + s.cfg.Name,
		Question:    fmt.Sprintf("Let the MCP server %s use your model (your provider and its cost)?", s.cfg.Name),
		Description: desc,
	})
	if err != nil {
		return nil, fmt.Errorf("sampling for MCP server %s was not allowed: %w", s.cfg.Name, err)
	}
	var ok bool
	if json.Unmarshal(allowed, &ok) != nil {
		var perm struct {
			Allow bool `json:"allow"`
		}
		_ = json.Unmarshal(allowed, &perm)
		ok = perm.Allow
	}
	if !ok {
		return nil, fmt.Errorf("the person did not allow MCP server %s to use the model", s.cfg.Name)
	}
	text, err := tc.LLM.GenerateText(ctx, tool.TextRequest{Prompt: prompt.String(), System: p.SystemPrompt, MaxTokens: int(p.MaxTokens)})
	if err != nil {
		return nil, fmt.Errorf("sampling for MCP server %s: %w", s.cfg.Name, err)
	}
	return &mcp.CreateMessageResult{Role: "assistant", Content: &mcp.TextContent{Text: text}, Model: "jean2", StopReason: "endTurn"}, nil
}

// excerptOf is s cut to at most n bytes on a character boundary, "…" marking a cut.
func excerptOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// Catalog is what a connected server offers beside its tools: resources (and resource
// templates) and prompts, for the web client to list.
type Catalog struct {
	Resources []*mcp.Resource         `json:"resources"`
	Templates []*mcp.ResourceTemplate `json:"templates"`
	Prompts   []*mcp.Prompt           `json:"prompts"`
}

// Catalog lists the server's resources, resource templates and prompts; a kind the server
// did not declare is left empty.
func (s *Server) Catalog(ctx context.Context) (Catalog, error) {
	s.mu.Lock()
	cs := s.session
	why := s.err
	s.mu.Unlock()
	out := Catalog{Resources: []*mcp.Resource{}, Templates: []*mcp.ResourceTemplate{}, Prompts: []*mcp.Prompt{}}
	if cs == nil {
		if why == nil {
			why = errors.New("not connected")
		}
		return out, why
	}
	caps := cs.InitializeResult().Capabilities
	if caps != nil && caps.Resources != nil {
		resources, err := listAll(cs.Resources(ctx, nil), "resources")
		if err != nil {
			return out, fmt.Errorf("MCP server %s: resources/list: %w", s.cfg.Name, err)
		}
		out.Resources = append(out.Resources, resources...)
		// Templates are optional even where resources are served: none when they fail.
		if templates, err := listAll(cs.ResourceTemplates(ctx, nil), "resource templates"); err == nil {
			out.Templates = append(out.Templates, templates...)
		}
	}
	if caps != nil && caps.Prompts != nil {
		prompts, err := listAll(cs.Prompts(ctx, nil), "prompts")
		if err != nil {
			return out, fmt.Errorf("MCP server %s: prompts/list: %w", s.cfg.Name, err)
		}
		out.Prompts = append(out.Prompts, prompts...)
	}
	return out, nil
}

// ReadResource reads one resource of the server.
func (s *Server) ReadResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	s.mu.Lock()
	cs := s.session
	s.mu.Unlock()
	if cs == nil {
		return nil, fmt.Errorf("MCP server %s is not connected", s.cfg.Name)
	}
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return nil, fmt.Errorf("MCP server %s: resources/read %s: %w", s.cfg.Name, uri, err)
	}
	return res, nil
}

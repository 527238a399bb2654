package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/jean2/jean2/ask"
	"github.com/jean2/jean2/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// peer is how a call reaches the client for input: directly (classic requests) or through
// the input requests of a multi-round-trip result.
// key is the ask's own name for its input request (tool.Ask.Key), "" for one of jean2's.
type peer interface {
	elicit(ctx context.Context, key string, p *mcp.ElicitParams) (*mcp.ElicitResult, error)
	sample(ctx context.Context, p *mcp.CreateMessageParams) (content []mcp.Content, model string, err error)
	listRoots(ctx context.Context, key string) (*mcp.ListRootsResult, error)
}

// classicPeer sends elicitation and sampling requests to the client while the call's
// request is open (protocol revisions before 2026-07-28).
type classicPeer struct{ ch *channel }

// requestCtx is a context that carries the open request (the streamable HTTP transport
// sends a request on that request's stream) and ends when ctx does.
func (c classicPeer) requestCtx(ctx context.Context) (context.Context, *mcp.ServerSession, func(), error) {
	rctx, ss, ok := c.ch.current()
	if !ok {
		return nil, nil, nil, errors.New("the MCP request of this call has ended")
	}
	merged, cancel := context.WithCancel(rctx)
	stop := context.AfterFunc(ctx, cancel)
	return merged, ss, func() { stop(); cancel() }, nil
}

func (c classicPeer) elicit(ctx context.Context, _ string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	rctx, ss, done, err := c.requestCtx(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	return ss.Elicit(rctx, p)
}

func (c classicPeer) sample(ctx context.Context, p *mcp.CreateMessageParams) ([]mcp.Content, string, error) {
	rctx, ss, done, err := c.requestCtx(ctx)
	if err != nil {
		return nil, "", err
	}
	defer done()
	res, err := ss.CreateMessage(rctx, p)
	if err != nil {
		return nil, "", err
	}
	return []mcp.Content{res.Content}, res.Model, nil
}

func (c classicPeer) listRoots(ctx context.Context, _ string) (*mcp.ListRootsResult, error) {
	rctx, ss, done, err := c.requestCtx(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	return ss.ListRoots(rctx, &mcp.ListRootsParams{})
}

// elicitAsker answers a call's asks by asking the client's user through elicitation.
type elicitAsker struct {
	peer      peer
	canElicit bool
	canRoots  bool // the client declared roots: a client_capability ask for "roots" is roots/list
	policy    ask.Policy
}

var (
	_ tool.Asker          = (*elicitAsker)(nil)
	_ ask.PermissionAsker = (*elicitAsker)(nil)
)

// ErrNoElicitation is wrapped by the error of an ask a client cannot answer.
var ErrNoElicitation = errors.New("the MCP client cannot answer asks: it did not declare the elicitation capability")

// AskPermission asks the client's user to confirm; without elicitation the session policy
// decides, and a denial is an error that says why no one was asked.
func (e *elicitAsker) AskPermission(ctx context.Context, a tool.Ask) (ask.Decision, error) {
	if !e.canElicit {
		d, err := e.policy.AskPermission(ctx, a)
		if err != nil || d.Granted {
			return d, err
		}
		return ask.Decision{}, fmt.Errorf("permission %q denied: %w, and the session policy does not grant it (%w)", a.Question, ErrNoElicitation, tool.ErrNoOneToAsk)
	}
	params, read := permissionForm(toolName(ctx), a)
	res, err := e.peer.elicit(ctx, a.Key, params)
	if err != nil {
		return ask.Decision{}, fmt.Errorf("permission ask %q: the MCP client did not answer: %w", a.Question, err)
	}
	return read(res)
}

// Ask asks the client's user with a form built from the ask.
func (e *elicitAsker) Ask(ctx context.Context, a tool.Ask) (json.RawMessage, error) {
	if a.Type == tool.AskPermission {
		d, err := e.AskPermission(ctx, a)
		if err != nil {
			return nil, err
		}
		return json.Marshal(d.Granted)
	}
	if a.Type == tool.AskClientCapability && a.Capability == CapabilityRoots {
		return e.roots(ctx, a)
	}
	if !e.canElicit {
		return nil, fmt.Errorf("cannot answer %s ask %q: %w (%w)", a.Type, a.Question, ErrNoElicitation, tool.ErrNoOneToAsk)
	}
	params, read, err := askForm(toolName(ctx), a)
	if err != nil {
		return nil, err
	}
	res, err := e.peer.elicit(ctx, a.Key, params)
	if err != nil {
		return nil, fmt.Errorf("%s ask %q: the MCP client did not answer: %w", a.Type, a.Question, err)
	}
	return read(res)
}

// CapabilityRoots is the client capability a tool asks for to learn the MCP client's roots
// (ctx.ask({target: 'client', type: 'client_capability', capability: 'roots'})).
const CapabilityRoots = "roots"

// ErrNoRoots is wrapped by the error of a roots ask a client cannot answer.
var ErrNoRoots = errors.New("the MCP client did not declare the roots capability")

// roots answers a client_capability ask for "roots" with the client's roots/list answer,
// as {type, capability, result: {roots: [{uri, name}]}}.
func (e *elicitAsker) roots(ctx context.Context, a tool.Ask) (json.RawMessage, error) {
	if !e.canRoots {
		return nil, fmt.Errorf("cannot answer the client_capability ask for roots: %w (%w)", ErrNoRoots, tool.ErrNoOneToAsk)
	}
	res, err := e.peer.listRoots(ctx, a.Key)
	if err != nil {
		return nil, fmt.Errorf("client_capability ask for roots: the MCP client did not answer: %w", err)
	}
	roots := res.Roots
	if roots == nil {
		roots = []*mcp.Root{}
	}
	type rootsResult struct {
		Roots []*mcp.Root `json:"roots"`
	}
	return json.Marshal(struct {
		Type       string      `json:"type"`
		Capability string      `json:"capability"`
		Result     rootsResult `json:"result"`
	}{tool.AskClientCapability, CapabilityRoots, rootsResult{roots}})
}

func toolName(ctx context.Context) string {
	if c, ok := ask.CallFrom(ctx); ok {
		return c.Tool
	}
	return "a tool"
}

// Form field names. One question is asked in "answer"; a form's questions in q1, q2, ….
const (
	fieldAnswer   = "answer"
	fieldAllow    = "allow"
	fieldDuration = "remember"
)

// permissionForm is a permission ask as a confirmation: allow yes or no, and how long to
// remember it. Declining or dismissing the form denies.
func permissionForm(toolName string, a tool.Ask) (*mcp.ElicitParams, func(*mcp.ElicitResult) (ask.Decision, error)) {
	var msg strings.Builder
	fmt.Fprintf(&msg, "Tool %s asks for permission: %s", toolName, a.Question)
	if a.Description != "" {
		msg.WriteString("\n" + a.Description)
	}
	if a.Risk != "" {
		msg.WriteString("\nRisk: " + a.Risk)
	}
	if len(a.Paths) > 0 {
		msg.WriteString("\nPaths: " + strings.Join(a.Paths, ", "))
	}
	duration := a.Duration
	if duration == "" {
		duration = tool.DurationOnce
	}
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			fieldAllow: map[string]any{"type": "boolean", "title": "Allow", "description": a.Question, "default": false},
			fieldDuration: map[string]any{"type": "string", "title": "Remember the answer for", "default": duration, "oneOf": []any{
				map[string]any{"const": tool.DurationOnce, "title": "this call only"},
				map[string]any{"const": tool.DurationSession, "title": "this session"},
				map[string]any{"const": tool.DurationWorkspace, "title": "this workspace"},
			}},
		},
		"required": []string{fieldAllow},
	}
	read := func(res *mcp.ElicitResult) (ask.Decision, error) {
		if res.Action != "accept" {
			return ask.Decision{}, nil
		}
		allow, _ := res.Content[fieldAllow].(bool)
		if !allow {
			return ask.Decision{}, nil
		}
		d := ask.Decision{Granted: true, Duration: tool.DurationOnce}
		if v, ok := res.Content[fieldDuration].(string); ok && v != "" {
			d.Duration = v
		}
		return d, nil
	}
	return &mcp.ElicitParams{Mode: "form", Message: msg.String(), RequestedSchema: schema}, read
}

// askForm is a question ask (confirm, text, single_select, multi_select, form) as a form,
// and how to turn the client's reply into the answer the ask type promises the tool.
func askForm(toolName string, a tool.Ask) (*mcp.ElicitParams, func(*mcp.ElicitResult) (json.RawMessage, error), error) {
	msg := fmt.Sprintf("Tool %s asks: %s", toolName, a.Question)
	if a.Question == "" {
		msg = fmt.Sprintf("Tool %s asks you to fill in a form.", toolName)
	}
	if a.Description != "" {
		msg += "\n" + a.Description
	}
	var (
		props    = map[string]any{}
		required []string
		readers  = map[string]func(any) (json.RawMessage, error){}
		order    []string
	)
	switch a.Type {
	case tool.AskConfirm, tool.AskText, tool.AskNumber, tool.AskSingleSelect, tool.AskMultiSelect:
		f, err := field(a)
		if err != nil {
			return nil, nil, err
		}
		name := a.Name
		if name == "" {
			name = fieldAnswer
		}
		props[name], readers[name] = f.schema, f.read
		required = append(required, name)
		order = append(order, name)
	case tool.AskForm:
		names := questionNames(a.Questions)
		for i, q := range a.Questions {
			name := names[i]
			f, err := field(q)
			if err != nil {
				return nil, nil, fmt.Errorf("form ask %q: question %d: %w", a.Question, i+1, err)
			}
			props[name], readers[name] = f.schema, f.read
			required = append(required, name)
			order = append(order, name)
		}
	default:
		return nil, nil, fmt.Errorf("%s asks cannot be put to an MCP client: elicitation has no form for them", a.Type)
	}
	schema := map[string]any{"type": "object", "properties": props, "required": required}
	read := func(res *mcp.ElicitResult) (json.RawMessage, error) {
		switch res.Action {
		case "accept":
		case "decline":
			if a.Type == tool.AskConfirm {
				return json.RawMessage("false"), nil
			}
			return nil, fmt.Errorf("%s ask %q: the person declined to answer (%s)", a.Type, a.Question, tool.UserRejection)
		default:
			return nil, fmt.Errorf("%s ask %q: the person dismissed the question without answering (%s)", a.Type, a.Question, tool.UserRejection)
		}
		answers := make([]json.RawMessage, len(order))
		for i, name := range order {
			v, ok := res.Content[name]
			if !ok {
				return nil, fmt.Errorf("%s ask %q: the client accepted the form but sent no %q", a.Type, a.Question, name)
			}
			ans, err := readers[name](v)
			if err != nil {
				return nil, fmt.Errorf("%s ask %q: field %q: %w", a.Type, a.Question, name, err)
			}
			answers[i] = ans
		}
		if a.Type != tool.AskForm {
			return answers[0], nil
		}
		resp := tool.FormResponse{Type: tool.AskForm, Answers: make([]tool.FormAnswer, len(a.Questions))}
		for i, q := range a.Questions {
			resp.Answers[i] = tool.FormAnswer{Question: q.Question, Answer: answers[i]}
		}
		return json.Marshal(resp)
	}
	return &mcp.ElicitParams{Mode: "form", Message: msg, RequestedSchema: schema}, read, nil
}

// questionNames are the field names of a form's questions: each one's own name, else qN
// (made unique should a question be named "qN" itself).
func questionNames(qs []tool.Ask) []string {
	taken := map[string]bool{}
	for _, q := range qs {
		taken[q.Name] = q.Name != ""
	}
	names := make([]string, len(qs))
	for i, q := range qs {
		names[i] = q.Name
		if names[i] != "" {
			continue
		}
		name := fmt.Sprintf("q%d", i+1)
		for taken[name] {
			name += "_"
		}
		taken[name] = true
		names[i] = name
	}
	return names
}

// formField is one question as a form field: its schema and how to read its value.
type formField struct {
	schema map[string]any
	read   func(any) (json.RawMessage, error)
}

// field makes the form field of one question.
func field(q tool.Ask) (formField, error) {
	s := map[string]any{"title": q.Question}
	desc := q.Description
	if q.Placeholder != "" {
		desc = strings.TrimSpace(desc + " (for example: " + q.Placeholder + ")")
	}
	if desc != "" {
		s["description"] = desc
	}
	def := bytes.TrimSpace(q.DefaultValue)
	hasDefault := len(def) > 0 && string(def) != "null"
	switch q.Type {
	case tool.AskConfirm:
		s["type"] = "boolean"
		if hasDefault {
			s["default"] = json.RawMessage(def)
		}
		return formField{s, func(v any) (json.RawMessage, error) {
			b, ok := v.(bool)
			if !ok {
				return nil, fmt.Errorf("%v is not true or false", v)
			}
			return json.Marshal(b)
		}}, nil
	case tool.AskText:
		s["type"] = "string"
		if hasDefault {
			s["default"] = json.RawMessage(def)
		}
		return formField{s, func(v any) (json.RawMessage, error) {
			str, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("%v is not text", v)
			}
			return json.Marshal(str)
		}}, nil
	case tool.AskNumber:
		return numberField(s, q, hasDefault, def), nil
	case tool.AskSingleSelect, tool.AskMultiSelect:
		return selectField(s, q, hasDefault, def), nil
	}
	return formField{}, fmt.Errorf("%s questions have no form field", q.Type)
}

// numberField is a number question as an integer or number field with its bounds.
func numberField(s map[string]any, q tool.Ask, hasDefault bool, def json.RawMessage) formField {
	s["type"] = "number"
	if q.Integer {
		s["type"] = "integer"
	}
	if q.Minimum != nil {
		s["minimum"] = *q.Minimum
	}
	if q.Maximum != nil {
		s["maximum"] = *q.Maximum
	}
	if hasDefault {
		s["default"] = def
	}
	return formField{s, func(v any) (json.RawMessage, error) {
		n, ok := v.(float64)
		if !ok || (q.Integer && n != math.Trunc(n)) || (q.Minimum != nil && n < *q.Minimum) || (q.Maximum != nil && n > *q.Maximum) {
			return nil, fmt.Errorf("%v is not a number the question takes", v)
		}
		return json.Marshal(n)
	}}
}

// choices are a select question's options as a form offers them: each option's key (what
// the client answers), as a plain list and titled, and how a key reads back as the value.
type choices struct {
	keys          []string
	untitled      bool // every option's label is its value: a plain enum says it all
	plain, titled []any
	byKey         map[string]json.RawMessage
}

func choicesOf(opts []tool.Option) choices {
	c := choices{keys: optionKeys(opts), untitled: true, byKey: map[string]json.RawMessage{}}
	for i, o := range opts {
		c.byKey[c.keys[i]] = optionValue(o)
		var v string
		c.untitled = c.untitled && json.Unmarshal(optionValue(o), &v) == nil && v == o.Label && c.keys[i] == o.Label
		c.plain = append(c.plain, c.keys[i])
		c.titled = append(c.titled, map[string]any{"const": c.keys[i], "title": o.Label})
	}
	return c
}

// value reads a key the client answered back as its option's value.
func (c choices) value(v any) (json.RawMessage, error) {
	k, ok := v.(string)
	if raw, known := c.byKey[k]; ok && known {
		return raw, nil
	}
	return nil, fmt.Errorf("%v is not one of the choices", v)
}

// selectField is a select question as an enum field. Options whose labels are their values
// are an untitled enum (enum, items.enum); others are titled (oneOf / items.anyOf of const
// and title), or enum and enumNames when the question asks for the legacy form. The client
// answers with an option's key, read back as its value.
func selectField(s map[string]any, q tool.Ask, hasDefault bool, def json.RawMessage) formField {
	c := choicesOf(q.Options)
	if q.Type == tool.AskMultiSelect {
		return multiSelectField(s, q, c, hasDefault, def)
	}
	s["type"] = "string"
	switch {
	case c.untitled:
		s["enum"] = c.plain
	case q.LegacyEnumNames:
		s["enum"] = c.plain
		s["enumNames"] = optionLabels(q.Options)
	default:
		s["oneOf"] = c.titled
	}
	if hasDefault {
		if k := keyOf(q.Options, c.keys, def); k != "" {
			s["default"] = k
		}
	}
	return formField{s, c.value}
}

// multiSelectField is a multi select as an array field of its choices.
func multiSelectField(s map[string]any, q tool.Ask, c choices, hasDefault bool, def json.RawMessage) formField {
	s["type"] = "array"
	if c.untitled {
		s["items"] = map[string]any{"type": "string", "enum": c.plain}
	} else {
		s["items"] = map[string]any{"anyOf": c.titled}
	}
	if q.Min != nil {
		s["minItems"] = *q.Min
	}
	if q.Max != nil {
		s["maxItems"] = *q.Max
	}
	if hasDefault {
		var defs []json.RawMessage
		if json.Unmarshal(def, &defs) == nil {
			ks := []string{}
			for _, d := range defs {
				if k := keyOf(q.Options, c.keys, d); k != "" {
					ks = append(ks, k)
				}
			}
			s["default"] = ks
		}
	}
	return formField{s, func(v any) (json.RawMessage, error) {
		list, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%v is not a list of choices", v)
		}
		vals := make([]json.RawMessage, 0, len(list))
		for _, item := range list {
			raw, err := c.value(item)
			if err != nil {
				return nil, err
			}
			vals = append(vals, raw)
		}
		return json.Marshal(vals)
	}}
}

// optionLabels are the options' labels, in order.
func optionLabels(opts []tool.Option) []string {
	labels := make([]string, len(opts))
	for i, o := range opts {
		labels[i] = o.Label
	}
	return labels
}

// optionKeys names each option in the form (the const a client answers): the options'
// values when each is a distinct, non-empty string — what a client that knows the tool
// would answer anyway — else each one's label, or its number and label when two options
// share a label.
func optionKeys(opts []tool.Option) []string {
	if keys, ok := stringValues(opts); ok {
		return keys
	}
	count := map[string]int{}
	for _, o := range opts {
		count[o.Label]++
	}
	keys := make([]string, len(opts))
	for i, o := range opts {
		keys[i] = o.Label
		if count[o.Label] > 1 || o.Label == "" {
			keys[i] = fmt.Sprintf("%d. %s", i+1, o.Label)
		}
	}
	return keys
}

// stringValues are the options' values when every one is a distinct non-empty string.
func stringValues(opts []tool.Option) ([]string, bool) {
	keys := make([]string, len(opts))
	seen := map[string]bool{}
	for i, o := range opts {
		var v string
		if json.Unmarshal(optionValue(o), &v) != nil || v == "" || seen[v] {
			return nil, false
		}
		seen[v], keys[i] = true, v
	}
	return keys, true
}

// optionValue is what choosing o answers: its value, or its label when it has none.
func optionValue(o tool.Option) json.RawMessage {
	v := bytes.TrimSpace(o.Value)
	if len(v) == 0 {
		b, _ := json.Marshal(o.Label)
		return b
	}
	return v
}

// keyOf returns the key of the option whose value is v, or "".
func keyOf(opts []tool.Option, keys []string, v json.RawMessage) string {
	var want any
	if json.Unmarshal(v, &want) != nil {
		return ""
	}
	for i, o := range opts {
		var have any
		if json.Unmarshal(optionValue(o), &have) == nil && reflect.DeepEqual(have, want) {
			return keys[i]
		}
	}
	return ""
}

package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
)

// Tool is something a registry can execute.
type Tool interface {
	Definition() Definition
	// Execute runs one call. ctx is the call's abort signal; c its powers. Arguments have
	// been validated against the input schema when the definition is strict.
	Execute(ctx context.Context, c *Context, args json.RawMessage) Result
}

// Func adapts a definition and a function to Tool.
type Func struct {
	Def Definition
	Run func(ctx context.Context, c *Context, args json.RawMessage) Result
}

// Definition returns f.Def.
func (f Func) Definition() Definition { return f.Def }

// Execute calls f.Run.
func (f Func) Execute(ctx context.Context, c *Context, args json.RawMessage) Result {
	return f.Run(ctx, c, args)
}

type entry struct {
	tool  Tool
	def   Definition
	input *Schema
}

// Registry holds tools by name. It is safe for concurrent use.
type Registry struct {
	mu    sync.RWMutex
	tools map[string]*entry
}

// NewRegistry makes an empty registry.
func NewRegistry() *Registry { return &Registry{tools: map[string]*entry{}} }

// Register adds a tool after checking its definition; a second tool with the same name is
// refused.
func (r *Registry) Register(t Tool) error {
	c, err := Check(t)
	if err != nil {
		return err
	}
	return r.Add(c)
}

// Checked is a tool whose definition was checked and whose input schema was compiled, once:
// a host that builds a new registry at every reload registers the tools that did not change
// without checking and compiling their schemas again.
type Checked struct{ e entry }

// Check checks t's definition and compiles its input schema for Registry.Add.
func Check(t Tool) (*Checked, error) {
	def := t.Definition()
	s, err := def.check()
	if err != nil {
		return nil, fmt.Errorf("register %q: %w", def.Name, err)
	}
	return &Checked{e: entry{tool: t, def: def, input: s}}, nil
}

// Add registers a checked tool; a second tool with the same name is refused.
func (r *Registry) Add(c *Checked) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.tools[c.e.def.Name]; dup {
		return fmt.Errorf("register %q: a tool with that name is already registered", c.e.def.Name)
	}
	e := c.e
	r.tools[e.def.Name] = &e
	return nil
}

// Unregister removes a tool; it reports whether one was there.
func (r *Registry) Unregister(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.tools[name]
	delete(r.tools, name)
	return ok
}

// Lookup returns the tool registered under name.
func (r *Registry) Lookup(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.tools[name]
	if !ok {
		return nil, false
	}
	return e.tool, true
}

// List returns every definition, sorted by name.
func (r *Registry) List() []Definition {
	r.mu.RLock()
	defs := make([]Definition, 0, len(r.tools))
	for _, e := range r.tools {
		defs = append(defs, e.def)
	}
	r.mu.RUnlock()
	sort.Slice(defs, func(i, j int) bool { return defs[i].Name < defs[j].Name })
	return defs
}

// Function is a tool in the OpenAI function-calling format.
type Function struct {
	Type     string       `json:"type"` // "function"
	Function FunctionSpec `json:"function"`
}

// FunctionSpec is the function part of Function.
type FunctionSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// ListForLLM returns the tools in the OpenAI function format, sorted by name.
func (r *Registry) ListForLLM() []Function {
	defs := r.List()
	out := make([]Function, len(defs))
	for i, d := range defs {
		out[i] = Function{Type: "function", Function: FunctionSpec{Name: d.Name, Description: d.Description, Parameters: d.InputSchema}}
	}
	return out
}

// Validate checks arguments for the named tool against its input schema. The error says
// which tool, and what is wrong where, in words a model can act on.
func (r *Registry) Validate(name string, args json.RawMessage) error {
	r.mu.RLock()
	e, ok := r.tools[name]
	r.mu.RUnlock()
	if !ok {
		return r.unknown(name)
	}
	return validateArgs(e, args)
}

func validateArgs(e *entry, args json.RawMessage) error {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if !e.def.IsStrict() {
		if !json.Valid(args) {
			return fmt.Errorf("invalid arguments for %s: arguments are not valid JSON; send a JSON object", e.def.Name)
		}
		return nil
	}
	// Validate decodes the arguments once; a decoding error means they are not JSON.
	if err := e.input.Validate(args); err != nil {
		if errors.Is(err, errNotJSON) {
			return fmt.Errorf("invalid arguments for %s: arguments are not valid JSON; send a JSON object", e.def.Name)
		}
		return fmt.Errorf("invalid arguments for %s: %w", e.def.Name, err)
	}
	return nil
}

func (r *Registry) unknown(name string) error {
	r.mu.RLock()
	names := make([]string, 0, len(r.tools))
	for n := range r.tools {
		names = append(names, n)
	}
	r.mu.RUnlock()
	sort.Strings(names)
	if len(names) == 0 {
		return fmt.Errorf("unknown tool %q: no tools are registered", name)
	}
	return fmt.Errorf("unknown tool %q: available tools are %s", name, strings.Join(names, ", "))
}

// Execute validates and runs a call. It never panics: an unknown tool, invalid arguments, a
// panicking tool and a cancelled call each come back as a failed result the model can act
// on. A nil c gets the detached default context.
func (r *Registry) Execute(ctx context.Context, name string, args json.RawMessage, c *Context) (res Result) {
	r.mu.RLock()
	e, ok := r.tools[name]
	r.mu.RUnlock()
	if !ok {
		return Result{Error: r.unknown(name).Error()}
	}
	if err := validateArgs(e, args); err != nil {
		return Result{Error: err.Error()}
	}
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if c == nil {
		c = NewContext(Context{Tool: name})
	}
	if err := ctx.Err(); err != nil {
		return Result{Error: fmt.Sprintf("%s was not run: %v", name, err)}
	}
	defer func() {
		if p := recover(); p != nil {
			res = Result{Error: fmt.Sprintf("tool %s panicked: %v\n%s", name, p, firstFrames(debug.Stack(), 12))}
		}
	}()
	return e.tool.Execute(ctx, c, args).Normalize()
}

func firstFrames(stack []byte, lines int) string {
	s := strings.Split(string(stack), "\n")
	if len(s) > lines {
		s = s[:lines]
	}
	return strings.Join(s, "\n")
}

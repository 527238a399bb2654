package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

// Handler is a typed tool function: In is decoded from the arguments, Out becomes the
// result.
type Handler[In, Out any] func(ctx context.Context, c *Context, in In) (Out, error)

// Typed is a Go tool compiled into the binary whose input schema comes from the Go struct In.
type Typed[In, Out any] struct {
	def     Definition
	handler Handler[In, Out]
}

// NewTyped builds a typed tool. def.InputSchema, when empty, is inferred from In (and
// OutputSchema from Out when Out is a struct), using `json` and `jsonschema` struct tags.
func NewTyped[In, Out any](def Definition, h Handler[In, Out]) (*Typed[In, Out], error) {
	if len(def.InputSchema) == 0 {
		s, err := jsonschema.For[In](nil)
		if err != nil {
			return nil, fmt.Errorf("tool %s: infer input schema: %w", def.Name, err)
		}
		if def.InputSchema, err = json.Marshal(s); err != nil {
			return nil, fmt.Errorf("tool %s: input schema: %w", def.Name, err)
		}
	}
	if len(def.OutputSchema) == 0 {
		if s, err := jsonschema.For[Out](nil); err == nil && s.Type == "object" {
			def.OutputSchema, _ = json.Marshal(s)
		}
	}
	if err := def.Check(); err != nil {
		return nil, err
	}
	return &Typed[In, Out]{def: def, handler: h}, nil
}

// Definition returns the tool's definition.
func (t *Typed[In, Out]) Definition() Definition { return t.def }

// Execute decodes the arguments, calls the handler and wraps its answer.
func (t *Typed[In, Out]) Execute(ctx context.Context, c *Context, args json.RawMessage) Result {
	var in In
	if len(args) > 0 {
		if err := json.Unmarshal(args, &in); err != nil {
			return Errorf("invalid arguments for %s: %v", t.def.Name, err)
		}
	}
	out, err := t.handler(ctx, c, in)
	if err != nil {
		var pe *ProtocolError
		if errors.As(err, &pe) {
			return Result{Error: pe.Message, ProtocolError: pe}
		}
		return Result{Error: err.Error()}
	}
	return Success(out)
}

// Package llm owns the models tools and the harness call. For now it holds what every
// provider will share: Unconfigured, the answer of ctx.llm until a provider is set up, and
// Structured, which gets schema-valid JSON out of any model that can generate text.
package llm

import (
	"context"
	"encoding/json"

	"github.com/jean2/jean2/tool"
)

// TextGenerator is a model that turns a request into text.
type TextGenerator interface {
	GenerateText(ctx context.Context, req tool.TextRequest) (string, error)
}

// TextGeneratorFunc adapts a function to TextGenerator.
type TextGeneratorFunc func(ctx context.Context, req tool.TextRequest) (string, error)

// GenerateText calls f.
func (f TextGeneratorFunc) GenerateText(ctx context.Context, req tool.TextRequest) (string, error) {
	return f(ctx, req)
}

// Unconfigured is ctx.llm while no provider is configured: every request fails with an error
// that wraps tool.ErrNoLLM and says how to fix it.
type Unconfigured struct{}

var _ tool.LLM = Unconfigured{}

// errUnconfigured is built per call: the package keeps no mutable state.
func errUnconfigured() error {
	return &unconfiguredError{}
}

type unconfiguredError struct{}

func (*unconfiguredError) Error() string {
	return tool.ErrNoLLM.Error() + "; set a provider in jean2's configuration to enable it"
}

func (*unconfiguredError) Unwrap() error { return tool.ErrNoLLM }

// GenerateText fails with tool.ErrNoLLM.
func (Unconfigured) GenerateText(context.Context, tool.TextRequest) (string, error) {
	return "", errUnconfigured()
}

// GenerateStructured fails with tool.ErrNoLLM.
func (Unconfigured) GenerateStructured(context.Context, tool.StructuredRequest) (json.RawMessage, error) {
	return nil, errUnconfigured()
}

// FromText makes a tool.LLM of a text generator; structured requests go through Structured.
func FromText(gen TextGenerator) tool.LLM { return textLLM{gen} }

type textLLM struct{ gen TextGenerator }

func (t textLLM) GenerateText(ctx context.Context, req tool.TextRequest) (string, error) {
	return t.gen.GenerateText(ctx, req)
}

func (t textLLM) GenerateStructured(ctx context.Context, req tool.StructuredRequest) (json.RawMessage, error) {
	return Structured(ctx, t.gen, req)
}

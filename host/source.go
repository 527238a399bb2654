package host

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/jean2/jean2/tool"
)

// ToolSource supplies tools that live outside the tools folder, such as the tools of an
// MCP server jean2 connects to. The host lists them and runs them like any other tool;
// when the source's tools change it calls Reload.
type ToolSource interface {
	// Name identifies the source ("mcp:github"); its tools are prefixed with it on a name
	// clash.
	Name() string
	// Kind and Runtime are what the tool list shows for the source's tools ("mcp").
	Kind() string
	// Tools lists the source's tools now. An error means the source has none to offer
	// (a server that failed to start): it is listed with that error.
	Tools() ([]tool.Tool, error)
}

// SourceSet is a set of tool sources that changes while the host runs; its owner calls
// Reload when it does.
type SourceSet interface {
	Sources() []ToolSource
}

// sources are the host's tool sources now: Options.Sources, then those of each SourceSet.
func (h *Host) sources() []ToolSource {
	out := h.opts.Sources
	for _, set := range h.opts.SourceSets {
		out = append(slices.Clip(out), set.Sources()...)
	}
	return out
}

// renamed serves a source's tool under another name (after a clash).
type renamed struct {
	tool.Tool
	def tool.Definition
}

func (r renamed) Definition() tool.Definition { return r.def }

func (r renamed) Execute(ctx context.Context, c *tool.Context, args json.RawMessage) tool.Result {
	return r.Tool.Execute(ctx, c, args)
}

// prefixedName is the name a source's tool gets when its own is taken.
func prefixedName(source, name string) string {
	b := []byte(source + "_" + name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			b[i] = '_'
		}
	}
	return string(b)
}

package host

import (
	"context"
	"errors"
	"log/slog"

	"github.com/jean2/jean2/llm"
	"github.com/jean2/jean2/tool"
)

// HasLLM reports whether the host was given a model provider. Callers that can offer a
// model of their own (an MCP client's sampling) use it only when the host has none.
func (h *Host) HasLLM() bool {
	_, unconfigured := h.llm.(llm.Unconfigured)
	return !unconfigured
}

// callLLM is the model a call's ctx.llm uses: the caller's when it gave one.
func callLLM(hostLLM tool.LLM, call Call) tool.LLM {
	if call.LLM != nil {
		return call.LLM
	}
	return hostLLM
}

// callLogInner is where a call's tool log records go: the host's log, and the caller's
// handler too when it gave one.
func callLogInner(hostLog slog.Handler, call Call) slog.Handler {
	if call.LogHandler == nil {
		return hostLog
	}
	return teeHandler{hostLog, call.LogHandler}
}

// teeHandler passes each record to both handlers; each decides for itself what it keeps.
type teeHandler struct{ a, b slog.Handler }

func (t teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return t.a.Enabled(ctx, l) || t.b.Enabled(ctx, l)
}

func (t teeHandler) Handle(ctx context.Context, r slog.Record) error {
	var errA, errB error
	if t.a.Enabled(ctx, r.Level) {
		errA = t.a.Handle(ctx, r.Clone())
	}
	if t.b.Enabled(ctx, r.Level) {
		errB = t.b.Handle(ctx, r.Clone())
	}
	return errors.Join(errA, errB)
}

func (t teeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return teeHandler{t.a.WithAttrs(as), t.b.WithAttrs(as)}
}

func (t teeHandler) WithGroup(name string) slog.Handler {
	return teeHandler{t.a.WithGroup(name), t.b.WithGroup(name)}
}

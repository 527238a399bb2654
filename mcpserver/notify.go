package mcpserver

import (
	"context"
	"log/slog"
	"sync"

	"github.com/jean2/jean2/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// channel is the way back to the client for one call: the request being served now, its
// session and its progress token. A classic call has one request for its whole life; a
// multi-round-trip call has one per round and none while it waits for the client's retry
// (what it reports then is dropped: there is no request to attach it to).
type channel struct {
	mu    sync.Mutex
	ctx   context.Context
	ss    *mcp.ServerSession
	token any
	sent  float64 // the last progress value sent; MCP wants it to grow
}

// enter makes req the request the call reports to.
func (c *channel) enter(ctx context.Context, req *mcp.CallToolRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ctx, c.ss, c.token = ctx, req.Session, req.Params.GetProgressToken()
}

// leave detaches the call from its request.
func (c *channel) leave() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ctx, c.ss, c.token = nil, nil, nil
}

// current returns the request being served, if any.
func (c *channel) current() (context.Context, *mcp.ServerSession, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ctx, c.ss, c.ss != nil
}

// progress sends a progress notification when the request asked for them. A report
// without numbers still counts up, so that the client sees each message as progress.
func (c *channel) progress(p tool.Progress) {
	c.mu.Lock()
	ctx, ss, token := c.ctx, c.ss, c.token
	if ss == nil || token == nil {
		c.mu.Unlock()
		return
	}
	value := p.Current
	if value <= c.sent {
		value = c.sent + 1
		if p.Total > 0 && value > p.Total {
			value = p.Total
		}
	}
	c.sent = value
	c.mu.Unlock()
	_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: value, Total: p.Total, Message: p.Message})
}

// logHandler sends a tool's log records to the client as log notifications; the session's
// log level (logging/setLevel, or the request's _meta on newer revisions) filters them.
type logHandler struct {
	ch     *channel
	logger string
	attrs  []slog.Attr
	group  string
}

func (h *logHandler) Enabled(context.Context, slog.Level) bool {
	_, _, ok := h.ch.current()
	return ok
}

func (h *logHandler) Handle(_ context.Context, r slog.Record) error {
	ctx, ss, ok := h.ch.current()
	if !ok {
		return nil
	}
	data := map[string]any{"message": r.Message}
	for _, a := range h.attrs {
		data[a.Key] = a.Value.Resolve().Any()
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "" {
			data[h.group+a.Key] = a.Value.Resolve().Any()
		}
		return true
	})
	return ss.Log(ctx, &mcp.LoggingMessageParams{Level: mcpLevel(r.Level), Logger: h.logger, Data: data})
}

func (h *logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append([]slog.Attr(nil), h.attrs...)
	for _, a := range as {
		if a.Key != "" {
			c.attrs = append(c.attrs, slog.Attr{Key: h.group + a.Key, Value: a.Value})
		}
	}
	return &c
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.group = h.group + name + "."
	return &c
}

func mcpLevel(l slog.Level) mcp.LoggingLevel {
	switch {
	case l >= slog.LevelError:
		return "error"
	case l >= slog.LevelWarn:
		return "warning"
	case l >= slog.LevelInfo:
		return "info"
	default:
		return "debug"
	}
}

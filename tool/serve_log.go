package tool

import (
	"context"
	"encoding"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"time"
)

// logHandler turns a call's log records into log notifications: the level, the message,
// and the attributes (groups nested) as the JSON object the host logs as data.
type logHandler struct {
	hc     *hostCall
	groups []string      // groups opened with WithGroup, outermost first
	attrs  []groupedAttr // attributes added with WithAttrs
}

type groupedAttr struct {
	groups []string
	attr   slog.Attr
}

var _ slog.Handler = (*logHandler)(nil)

// Enabled is true for every level: the host's logger decides what it keeps.
func (h *logHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *logHandler) Handle(_ context.Context, r slog.Record) error {
	data := map[string]any{}
	for _, ga := range h.attrs {
		putAttr(data, ga.groups, ga.attr)
	}
	r.Attrs(func(a slog.Attr) bool {
		putAttr(data, h.groups, a)
		return true
	})
	p := wireLog{CallID: h.hc.id, Level: levelName(r.Level), Message: r.Message}
	if len(data) > 0 {
		raw, err := json.Marshal(data)
		if err != nil {
			raw, _ = json.Marshal("[cannot be serialized: " + err.Error() + "]")
		}
		p.Data = raw
	}
	h.hc.notify(methodLog, p)
	return nil
}

func (h *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	n := *h
	n.attrs = append([]groupedAttr(nil), h.attrs...)
	for _, a := range attrs {
		n.attrs = append(n.attrs, groupedAttr{groups: h.groups, attr: a})
	}
	return &n
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	n := *h
	n.groups = append(append([]string(nil), h.groups...), name)
	return &n
}

func levelName(l slog.Level) string {
	switch {
	case l < slog.LevelInfo:
		return "debug"
	case l < slog.LevelWarn:
		return "info"
	case l < slog.LevelError:
		return "warn"
	}
	return "error"
}

// putAttr stores a under the nested groups of m, following slog's rules: an empty attribute
// is dropped, a group without a key is inlined, an empty group is left out.
func putAttr(m map[string]any, groups []string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		members := a.Value.Group()
		if len(members) == 0 {
			return
		}
		if a.Key != "" {
			groups = append(groups[:len(groups):len(groups)], a.Key)
		}
		for _, member := range members {
			putAttr(m, groups, member)
		}
		return
	}
	for _, g := range groups {
		sub, ok := m[g].(map[string]any)
		if !ok {
			sub = map[string]any{}
			m[g] = sub
		}
		m = sub
	}
	m[a.Key] = logValue(a.Value)
}

// logValue makes a value JSON can carry; what it cannot becomes its printed form.
func logValue(v slog.Value) any {
	switch v.Kind() {
	case slog.KindString:
		return v.String()
	case slog.KindInt64:
		return v.Int64()
	case slog.KindUint64:
		return v.Uint64()
	case slog.KindFloat64:
		f := v.Float64()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Sprint(f)
		}
		return f
	case slog.KindBool:
		return v.Bool()
	case slog.KindDuration:
		return v.Duration().String()
	case slog.KindTime:
		return v.Time().Format(time.RFC3339Nano)
	}
	x := v.Any()
	switch t := x.(type) {
	case error:
		return t.Error()
	case json.Marshaler:
		if raw, err := t.MarshalJSON(); err == nil && json.Valid(raw) {
			return json.RawMessage(raw)
		}
	case encoding.TextMarshaler:
		if b, err := t.MarshalText(); err == nil {
			return string(b)
		}
	case fmt.Stringer:
		return t.String()
	}
	if raw, err := json.Marshal(x); err == nil {
		return json.RawMessage(raw)
	}
	return fmt.Sprint(x)
}

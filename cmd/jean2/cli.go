package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/jean2/jean2/ask"
	"github.com/jean2/jean2/tool"
)

// cliAsker picks who answers asks for `tools run`: the answers file when given, the
// terminal when stdin is one, otherwise nobody (each ask fails, saying how to answer).
func cliAsker(e env, answersFile string) (tool.Asker, error) {
	if answersFile != "" {
		a, err := ask.LoadAnswers(answersFile)
		if err != nil {
			return nil, usagef("--answers: %v", err)
		}
		return a, nil
	}
	if e.stdinIsTerminal {
		return ask.NewTerminal(e.stdin, e.stderr, nil), nil
	}
	return ask.Refuse{}, nil
}

// cliLogger writes the host's and the tools' log lines to stderr; JEAN2_LOG=debug shows more.
func cliLogger(e env) *slog.Logger {
	level := slog.LevelInfo
	switch strings.ToLower(e.getenv("JEAN2_LOG")) {
	case "debug":
		level = slog.LevelDebug
	case "warn":
		level = slog.LevelWarn
	case "error", "quiet":
		level = slog.LevelError
	}
	return slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
}

// cliProgress prints a tool's progress reports on stderr.
func cliProgress(e env) func(tool.Progress) {
	return func(p tool.Progress) {
		switch {
		case p.Total > 0:
			fmt.Fprintf(e.stderr, "progress: %s %.0f/%.0f\n", p.Message, p.Current, p.Total)
		case p.Message != "":
			fmt.Fprintf(e.stderr, "progress: %s\n", p.Message)
		}
	}
}

// onlyTool passes on the log records about one tool, and those about no tool in particular:
// `tools run NAME` has no word to say about another folder that fails to load.
type onlyTool struct {
	slog.Handler
	name string
}

func (o onlyTool) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "threw ") {
		return nil // throwPrinter shows it, stack and all
	}
	keep := true
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "tool" {
			keep = a.Value.String() == o.name
			return false
		}
		return true
	})
	if !keep {
		return nil
	}
	return o.Handler.Handle(ctx, r)
}

func (o onlyTool) WithAttrs(as []slog.Attr) slog.Handler {
	for _, a := range as {
		if a.Key == "tool" && a.Value.String() != o.name {
			return discardHandler{}
		}
	}
	return onlyTool{Handler: o.Handler.WithAttrs(as), name: o.name}
}

func (o onlyTool) WithGroup(name string) slog.Handler {
	return onlyTool{Handler: o.Handler.WithGroup(name), name: o.name}
}

type discardHandler struct{}

func (discardHandler) Enabled(context.Context, slog.Level) bool  { return false }
func (discardHandler) Handle(context.Context, slog.Record) error { return nil }
func (d discardHandler) WithAttrs([]slog.Attr) slog.Handler      { return d }
func (d discardHandler) WithGroup(string) slog.Handler           { return d }

// throwPrinter prints the error a tool threw with its stack, mapped to the tool's files
// (tool.ts:LINE:COL), as plain lines on stderr: the worker logs it (message "threw …",
// data.stack) and the model sees only the message.
type throwPrinter struct{ w io.Writer }

func (throwPrinter) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }

func (t throwPrinter) Handle(_ context.Context, r slog.Record) error {
	if !strings.HasPrefix(r.Message, "threw ") {
		return nil
	}
	var stack string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "data" {
			return true
		}
		var d struct {
			Stack string `json:"stack"`
		}
		if raw, ok := a.Value.Any().(json.RawMessage); ok && json.Unmarshal(raw, &d) == nil {
			stack = d.Stack
		}
		return false
	})
	fmt.Fprintf(t.w, "jean2: the tool %s\n", r.Message)
	if _, frames, ok := strings.Cut(stack, "\n"); ok {
		fmt.Fprintln(t.w, frames)
	}
	return nil
}

func (t throwPrinter) WithAttrs([]slog.Attr) slog.Handler { return t }
func (t throwPrinter) WithGroup(string) slog.Handler      { return t }

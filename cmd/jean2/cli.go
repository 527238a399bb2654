package main

import (
	"fmt"
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

package main

import (
	"strings"
	"syscall"
	"testing"
)

// jean2 serve says at start which providers and default model are active, or that none is
// and how to add one.
func TestServeSaysWhichProviders(t *testing.T) {
	c := newCLI(t)
	s := startServe(t, c, nil)
	if logs := s.logs.String(); !strings.Contains(logs, "no model provider is configured") || !strings.Contains(logs, "OPENAI_MODEL=") {
		t.Errorf("without a provider:\n%s", logs)
	}
	if err := s.kill(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	s = startServe(t, c, []string{"OPENAI_API_KEY=sk-x", "OPENAI_BASE_URL=http://127.0.0.1:9/v1", "OPENAI_MODEL=gpt-4o", "ANTHROPIC_API_KEY=sk-y"})
	logs := s.logs.String()
	if !strings.Contains(logs, "providers: openai (openai, gpt-4o, from the environment); anthropic (anthropic, no default model, from the environment)") ||
		!strings.Contains(logs, "default model: gpt-4o of openai") || strings.Contains(logs, "sk-x") {
		t.Errorf("with providers:\n%s", logs)
	}
	if err := s.kill(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	s = startServe(t, c, []string{"ANTHROPIC_API_KEY=sk-y"})
	if logs := s.logs.String(); !strings.Contains(logs, "default provider anthropic has no default model") || !strings.Contains(logs, "ANTHROPIC_MODEL") {
		t.Errorf("without a default model:\n%s", logs)
	}
}

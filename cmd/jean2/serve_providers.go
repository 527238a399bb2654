package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/jean2/jean2/provider"
)

// providerLines say at start which providers are configured and which model sessions get
// by default, or that there is none and how to add one.
func providerLines(set provider.Set, home string) []string {
	if len(set.Providers) == 0 {
		return []string{
			"no model provider is configured: sessions cannot answer yet. Add one with",
			"OPENAI_API_KEY=… OPENAI_MODEL=gpt-4o (OPENAI_BASE_URL for Ollama, vLLM, OpenRouter…), or ANTHROPIC_API_KEY=… ANTHROPIC_MODEL=…,",
			"or in the web client's Settings, or in " + filepath.Join(home, provider.FileName) + " (docs/providers.md)",
		}
	}
	var names []string
	for _, c := range set.Providers {
		where := "from " + c.Source
		if c.Source == provider.SourceEnv {
			where = "from the environment"
		}
		model := c.Model
		if model == "" {
			model = "no default model"
		}
		names = append(names, fmt.Sprintf("%s (%s, %s, %s)", c.Name, c.Kind, model, where))
	}
	out := []string{"providers: " + strings.Join(names, "; ")}
	def, _ := set.Lookup(set.Default)
	switch {
	case def.Model == "":
		out = append(out, fmt.Sprintf("default provider %s has no default model: sessions that choose none cannot answer; set %s, or its model in Settings",
			set.Default, modelEnvHint(def)))
	default:
		out = append(out, fmt.Sprintf("default model: %s of %s", def.Model, set.Default))
	}
	return out
}

func modelEnvHint(c provider.Config) string {
	switch c.Name {
	case "openai", "anthropic", "openrouter", "ollama":
		if c.Source == provider.SourceEnv {
			return strings.ToUpper(c.Name) + "_MODEL"
		}
	}
	return "\"model\" in " + provider.FileName
}

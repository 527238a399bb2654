package provider

import "strings"

// MinContextWindow is the smallest context window a provider may be configured with: a
// window smaller than this holds no useful conversation.
const MinContextWindow = 1024

// knownWindows are the context windows of common models, by model name prefix, longest
// prefix first where they overlap. A model named in none has no known window: only a
// configured contextWindow (or a provider's "context length exceeded" error) compacts its
// sessions.
var knownWindows = []struct {
	prefix string
	tokens int
}{
	{"gpt-4.1", 1_047_576},
	{"gpt-4o", 128_000},
	{"gpt-4-turbo", 128_000},
	{"gpt-4", 8_192},
	{"gpt-3.5-turbo", 16_385},
	{"gpt-5", 400_000},
	{"o1", 200_000},
	{"o3", 200_000},
	{"o4", 200_000},
	{"claude-sonnet-4", 200_000},
	{"claude-opus-4", 200_000},
	{"claude-haiku-4", 200_000},
	{"claude-3", 200_000},
	{"claude", 200_000},
	{"gemini-2", 1_048_576},
	{"gemini-1.5", 1_048_576},
	{"deepseek", 128_000},
	{"mistral-large", 128_000},
	{"llama3.1", 128_000},
	{"llama3.2", 128_000},
	{"llama3.3", 128_000},
	{"llama3", 8_192},
	{"qwen2.5", 32_768},
	{"qwen3", 40_960},
}

// ContextWindowOf returns the known context window of a model in tokens, 0 when unknown.
// A vendor prefix ("openai/gpt-4o", as OpenRouter names models) is ignored, and an Ollama
// tag (":8b") does not change the family.
func ContextWindowOf(model string) int {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	best, n := 0, 0
	for _, k := range knownWindows {
		if strings.HasPrefix(m, k.prefix) && len(k.prefix) > n {
			best, n = k.tokens, len(k.prefix)
		}
	}
	return best
}

// Window is the context window of model on the provider c configures: c's
// contextWindow when set, else the model's known default, else 0 (unknown).
func (c Config) Window(model string) int {
	if c.ContextWindow > 0 {
		return c.ContextWindow
	}
	return ContextWindowOf(model)
}

package provider_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/jean2/jean2/provider"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestFromEnv(t *testing.T) {
	got := provider.FromEnv(envOf(map[string]string{
		"OPENAI_API_KEY":     "sk-openai",
		"OPENAI_MODEL":       "gpt-x",
		"ANTHROPIC_API_KEY":  "sk-ant",
		"ANTHROPIC_BASE_URL": "https://proxy.example/anthropic",
		"OPENROUTER_API_KEY": "sk-or",
		"OLLAMA_HOST":        "0.0.0.0",
		"OLLAMA_MODEL":       "qwen3",
	}))
	want := []provider.Config{
		{Name: "openai", Kind: provider.KindOpenAI, APIKey: "sk-openai", APIKeyEnv: "OPENAI_API_KEY", Model: "gpt-x", Source: provider.SourceEnv},
		{Name: "anthropic", Kind: provider.KindAnthropic, BaseURL: "https://proxy.example/anthropic", APIKey: "sk-ant", APIKeyEnv: "ANTHROPIC_API_KEY", Source: provider.SourceEnv},
		{Name: "openrouter", Kind: provider.KindOpenAI, BaseURL: provider.OpenRouterBaseURL, APIKey: "sk-or", APIKeyEnv: "OPENROUTER_API_KEY", Source: provider.SourceEnv},
		{Name: "ollama", Kind: provider.KindOpenAI, BaseURL: "http://127.0.0.1:11434/v1", Model: "qwen3", Source: provider.SourceEnv},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("FromEnv:\n got  %#v\n want %#v", got, want)
	}
	// A base URL alone configures a keyless server (a local vLLM, say).
	local := provider.FromEnv(envOf(map[string]string{"OPENAI_BASE_URL": "http://gpu-box:8000/v1"}))
	if len(local) != 1 || local[0].BaseURL != "http://gpu-box:8000/v1" || local[0].APIKey != "" || local[0].APIKeyEnv != "" {
		t.Fatalf("base URL only: %+v", local)
	}
	if none := provider.FromEnv(envOf(nil)); len(none) != 0 {
		t.Fatalf("empty environment: %+v", none)
	}
}

func TestOllamaHostForms(t *testing.T) {
	for host, want := range map[string]string{
		"127.0.0.1":                  "http://127.0.0.1:11434/v1",
		"0.0.0.0:11434":              "http://127.0.0.1:11434/v1",
		"gpu-box:9999":               "http://gpu-box:9999/v1",
		"http://gpu-box":             "http://gpu-box:11434/v1",
		"https://ollama.example.com": "https://ollama.example.com:443/v1",
		"http://[::1]:11434":         "http://[::1]:11434/v1",
		":11434":                     "http://127.0.0.1:11434/v1",
		"http://h:1/ollama/":         "http://h:1/ollama/v1",
	} {
		got := provider.FromEnv(envOf(map[string]string{"OLLAMA_HOST": host}))
		if len(got) != 1 || got[0].BaseURL != want {
			t.Errorf("OLLAMA_HOST=%q: %+v, want %s", host, got, want)
		}
	}
}

func TestLoadFileAndEnvironment(t *testing.T) {
	home := t.TempDir()
	writeFile(t, home, `{
  "default": "local",
  "providers": [
    {"name": "local", "kind": "openai", "baseUrl": "http://127.0.0.1:8080/v1", "model": "qwen"},
    {"name": "anthropic", "kind": "anthropic", "apiKeyEnv": "MY_CLAUDE_KEY", "model": "claude-x", "maxTokens": 4096}
  ]
}`)
	env := envOf(map[string]string{"MY_CLAUDE_KEY": "sk-file-ant", "ANTHROPIC_API_KEY": "sk-env-ant", "OPENAI_API_KEY": "sk-env-openai"})
	set, err := provider.Load(home, env)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range set.Providers {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "local,anthropic,openai" || set.Default != "local" {
		t.Fatalf("providers %v, default %q; want the file's, then the environment's not named in the file", names, set.Default)
	}
	ant, _ := set.Lookup("anthropic")
	if ant.APIKey.Reveal() != "sk-file-ant" || ant.APIKeyEnv != "MY_CLAUDE_KEY" || ant.MaxTokens != 4096 || ant.Source != filepath.Join(home, provider.FileName) {
		t.Fatalf("the file's anthropic entry lost to the environment: %+v", ant.Redacted())
	}
	if got := set.KeyEnvNames(); !reflect.DeepEqual(got, []string{"MY_CLAUDE_KEY", "OPENAI_API_KEY"}) {
		t.Fatalf("KeyEnvNames = %v", got)
	}

	// No file: the environment alone, JEAN2_PROVIDER picks the default.
	set, err = provider.Load(t.TempDir(), envOf(map[string]string{"OPENAI_API_KEY": "a", "ANTHROPIC_API_KEY": "b", "JEAN2_PROVIDER": "anthropic"}))
	if err != nil || len(set.Providers) != 2 || set.Default != "anthropic" {
		t.Fatalf("Load without a file = %+v, %v", set.Redacted(), err)
	}
	if _, err := provider.Load(t.TempDir(), envOf(map[string]string{"OPENAI_API_KEY": "a", "JEAN2_PROVIDER": "nope"})); err == nil {
		t.Fatal("JEAN2_PROVIDER naming nothing configured was accepted")
	}
	if set, err := provider.Load(t.TempDir(), envOf(nil)); err != nil || len(set.Providers) != 0 || set.Default != "" {
		t.Fatalf("nothing configured: %+v, %v", set, err)
	}
}

// Adding a provider to providers.json without naming a default never takes the default
// from the environment's provider, and adding one after the file's first keeps the first
// (issue 24, point 12).
func TestAddingAProviderKeepsTheDefault(t *testing.T) {
	home := t.TempDir()
	env := envOf(map[string]string{"OPENAI_API_KEY": "sk-env", "OPENAI_MODEL": "gpt-x"})
	before, err := provider.Load(home, env)
	if err != nil || before.Default != "openai" {
		t.Fatalf("environment only: default %q, %v", before.Default, err)
	}
	writeFile(t, home, `{"providers": [{"name": "local", "kind": "openai", "baseUrl": "http://127.0.0.1:8080/v1", "model": "qwen"}]}`)
	after, err := provider.Load(home, env)
	if err != nil || after.Default != "openai" {
		t.Fatalf("after adding local to providers.json the default is %q (%v), want the environment's openai as before", after.Default, err)
	}
	// No environment provider: the file's first stays the default as others are added.
	other := t.TempDir()
	writeFile(t, other, `{"providers": [{"name": "a", "kind": "openai", "baseUrl": "http://127.0.0.1:1/v1", "model": "m"}]}`)
	writeFile(t, other, `{"providers": [{"name": "a", "kind": "openai", "baseUrl": "http://127.0.0.1:1/v1", "model": "m"},
  {"name": "b", "kind": "openai", "baseUrl": "http://127.0.0.1:2/v1", "model": "m"}]}`)
	if set, err := provider.Load(other, envOf(nil)); err != nil || set.Default != "a" {
		t.Fatalf("file only, b added after a: default %q, %v", set.Default, err)
	}
}

func writeFile(t *testing.T, home, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(home, provider.FileName), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestLoadRefusesBadFiles(t *testing.T) {
	for name, c := range map[string]struct{ file, want string }{
		"syntax":        {"{\n  \"providers\": [\n    {\"name\": \"a\",}\n  ]\n}", "line 3"},
		"unknown field": {`{"providers": [{"name": "a", "kind": "openai", "api_key": "x"}]}`, `unknown field "api_key"`},
		"no name":       {`{"providers": [{"kind": "openai"}]}`, "provider 1: give it a name"},
		"twice":         {`{"providers": [{"name": "a", "kind": "openai"}, {"name": "a", "kind": "openai"}]}`, "used twice"},
		"kind":          {`{"providers": [{"name": "a", "kind": "gemini"}]}`, `kind "gemini" is not openai or anthropic`},
		"url":           {`{"providers": [{"name": "a", "kind": "openai", "baseUrl": "localhost:8080"}]}`, "is not an http(s) URL"},
		"both keys":     {`{"providers": [{"name": "a", "kind": "openai", "apiKey": "x", "apiKeyEnv": "Y"}]}`, "not both"},
		"unset key":     {`{"providers": [{"name": "a", "kind": "openai", "apiKeyEnv": "NOT_SET"}]}`, "NOT_SET is not set"},
		"default":       {`{"default": "b", "providers": [{"name": "a", "kind": "openai"}]}`, `default provider "b"`},
		"type":          {`{"providers": [{"name": "a", "kind": "openai", "maxTokens": "lots"}]}`, "line 1"},
	} {
		t.Run(name, func(t *testing.T) {
			home := t.TempDir()
			writeFile(t, home, c.file)
			_, err := provider.Load(home, envOf(nil))
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), provider.FileName) {
				t.Fatalf("error = %v; want it to name the file and say %q", err, c.want)
			}
		})
	}
}

// TestKeysNeverShow prints, logs and marshals configs every usual way and finds the key
// in none of the output.
func TestKeysNeverShow(t *testing.T) {
	const key = "sk-very-secret-key-123"
	c := provider.Config{Name: "openai", Kind: provider.KindOpenAI, BaseURL: "https://user:pw-secret@proxy.example/v1", APIKey: key, APIKeyEnv: "OPENAI_API_KEY"}
	set := provider.Set{Providers: []provider.Config{c}, Default: "openai"}
	var out bytes.Buffer
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		fmt.Fprintf(&out, verb+"\n", c)
		fmt.Fprintf(&out, verb+"\n", set)
		fmt.Fprintf(&out, verb+"\n", c.APIKey)
	}
	for _, v := range []any{c, set, c.Redacted(), set.Redacted()} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(b)
	}
	slog.New(slog.NewJSONHandler(&out, nil)).Info("provider", "config", c, "key", c.APIKey)
	slog.New(slog.NewTextHandler(&out, nil)).Info("provider", "config", c, "key", c.APIKey)
	if strings.Contains(out.String(), key) || strings.Contains(out.String(), "pw-secret") {
		t.Fatalf("the key shows:\n%s", out.String())
	}
	info := c.Redacted()
	if !info.HasKey || info.KeyEnv != "OPENAI_API_KEY" || info.BaseURL != "https://user:xxxxx@proxy.example/v1" {
		t.Fatalf("Redacted = %+v", info)
	}
	if c.APIKey.Reveal() != key {
		t.Fatal("Reveal lost the key")
	}
}

func TestWriteFileRoundTrip(t *testing.T) {
	home := t.TempDir()
	f := provider.File{Default: "b", Providers: []provider.FileEntry{
		{Name: "a", Kind: provider.KindOpenAI, BaseURL: "http://127.0.0.1:1234/v1", Model: "m"},
		{Name: "b", Kind: provider.KindAnthropic, APIKey: "sk-in-file"},
	}}
	if err := provider.WriteFile(home, f); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(home, provider.FileName))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("file mode %v, %v; want 0600 (it may hold keys)", st.Mode(), err)
	}
	set, err := provider.Load(home, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := set.Lookup("b"); set.Default != "b" || b.APIKey.Reveal() != "sk-in-file" || len(set.Providers) != 2 {
		t.Fatalf("read back %+v", set.Redacted())
	}
	if err := provider.WriteFile(home, provider.File{Providers: []provider.FileEntry{{Name: "x", Kind: "nope"}}}); err == nil {
		t.Fatal("WriteFile wrote a file Load would refuse")
	}
	entries, _ := os.ReadDir(home)
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

func TestNewRefusesBadConfigs(t *testing.T) {
	for _, c := range []provider.Config{
		{Kind: provider.KindOpenAI},
		{Name: "x", Kind: "other"},
		{Name: "x", Kind: provider.KindAnthropic, BaseURL: "ftp://h"},
		{Name: "x", Kind: provider.KindOpenAI, MaxTokens: -1},
	} {
		if _, err := provider.New(c, nil); err == nil {
			t.Errorf("New(%+v) accepted", c.Redacted())
		}
	}
	if _, err := provider.NewAnthropic(provider.Config{Name: "x", Kind: provider.KindOpenAI}, nil); err == nil {
		t.Error("NewAnthropic accepted an openai config")
	}
}

package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/provider/providertest"
)

func TestProvidersAPIKeepsKeysWriteOnly(t *testing.T) {
	f := newFixture(t)
	f.tools = nil
	f.start()
	var view providersView
	f.call("GET", "/api/providers", nil, 200, &view)
	if view.Default != "openai" || len(view.Providers) != 1 || !view.Providers[0].HasKey || view.Providers[0].Editable {
		t.Fatalf("providers = %+v", view)
	}

	// A second fake, configured through the API with its key.
	other := providertest.NewOpenAI(t)
	other.Key = "sk-second-secret-4567"
	put := map[string]any{"default": "local", "providers": []map[string]any{
		{"name": "local", "kind": "openai", "baseUrl": other.BaseURL(), "apiKey": other.Key, "model": "local-model"},
	}}
	body := f.call("PUT", "/api/providers", put, 200, &view)
	if strings.Contains(string(body), other.Key) {
		t.Fatal("PUT /api/providers echoed the key")
	}
	if view.Default != "local" || len(view.Providers) != 2 {
		t.Fatalf("providers after PUT = %+v", view)
	}
	path := filepath.Join(f.home, provider.FileName)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v, mode %v", path, err, fi.Mode())
	}
	_, raw := f.request("GET", "/api/providers", nil, nil)
	if strings.Contains(string(raw), other.Key) || strings.Contains(string(raw), f.fake.Key) {
		t.Fatal("GET /api/providers shows a key")
	}

	// An edit without the key keeps it: a turn reaches the second fake with it.
	put["providers"].([]map[string]any)[0]["apiKey"] = ""
	put["providers"].([]map[string]any)[0]["model"] = "local-2"
	f.call("PUT", "/api/providers", put, 200, &view)
	var file provider.File
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &file); err != nil || file.Providers[0].APIKey != other.Key || file.Providers[0].Model != "local-2" {
		t.Fatalf("providers.json after an edit without key: %s", data)
	}
	_, ses := f.session()
	sock := f.dial("/api/sessions/"+ses.ID+"/ws", nil)
	other.Push(providertest.OpenAIText("local-2", "from local"))
	f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "hi"}, 202, nil)
	fin, _ := sock.until("turn.finished", 30*time.Second)
	if !strings.Contains(string(fin.Payload), `"done"`) || len(other.Requests()) != 1 || len(f.fake.Requests()) != 0 {
		t.Fatalf("turn with the new default: %s; requests %d/%d", fin.Payload, len(other.Requests()), len(f.fake.Requests()))
	}

	// Refused: a key variable tools could see, a bad kind, an unknown default.
	for _, bad := range []map[string]any{
		{"providers": []map[string]any{{"name": "x", "kind": "openai", "apiKeyEnv": "MY_KEY"}}},
		{"providers": []map[string]any{{"name": "x", "kind": "gemini"}}},
		{"default": "y", "providers": []map[string]any{{"name": "x", "kind": "openai"}}},
		{"providers": []map[string]any{{"name": "x", "kind": "openai", "apiKey": "k", "clearKey": true}}},
	} {
		if code := errorCode(t, f.call("PUT", "/api/providers", bad, 400, nil)); code != codeBadRequest {
			t.Errorf("PUT %v: %s", bad, code)
		}
	}
	// clearKey drops the stored key.
	put["providers"].([]map[string]any)[0]["clearKey"] = true
	f.call("PUT", "/api/providers", put, 200, &view)
	for _, p := range view.Providers {
		if p.Name == "local" && p.HasKey {
			t.Fatalf("clearKey kept the key: %+v", p)
		}
	}
}

// The default may be a provider of the environment, which providers.json cannot name: it is
// kept in the database, survives a restart, and a PUT that omits the default keeps it.
func TestDefaultProviderFromEnvironment(t *testing.T) {
	f := newFixture(t)
	f.tools = nil
	f.start()
	other := providertest.NewOpenAI(t)
	local := map[string]any{"name": "local", "kind": "openai", "baseUrl": other.BaseURL(), "apiKey": "sk-local", "model": "m"}
	var view providersView
	f.call("PUT", "/api/providers", map[string]any{"default": "local", "providers": []any{local}}, 200, &view)
	if view.Default != "local" {
		t.Fatalf("default = %q, want local", view.Default)
	}
	f.call("PUT", "/api/providers", map[string]any{"default": "openai", "providers": []any{local}}, 200, &view)
	if view.Default != "openai" {
		t.Fatalf("default after choosing the environment's openai = %q", view.Default)
	}
	data, _ := os.ReadFile(filepath.Join(f.home, provider.FileName))
	var file provider.File
	if err := json.Unmarshal(data, &file); err != nil || file.Default != "" || len(file.Providers) != 1 {
		t.Fatalf("providers.json = %s", data)
	}
	// Omitted, the default stays.
	f.call("PUT", "/api/providers", map[string]any{"providers": []any{local}}, 200, &view)
	if view.Default != "openai" {
		t.Fatalf("default after a PUT without one = %q", view.Default)
	}
	// A name configured nowhere is refused, saying what is.
	body := f.call("PUT", "/api/providers", map[string]any{"default": "nowhere", "providers": []any{local}}, 400, nil)
	if !strings.Contains(string(body), "openai") {
		t.Errorf("refusal does not name the environment's providers: %s", body)
	}
	// After a restart the default is the one chosen.
	f.stop()
	f.start()
	f.call("GET", "/api/providers", nil, 200, &view)
	if view.Default != "openai" {
		t.Fatalf("default after a restart = %q", view.Default)
	}
	// Choosing a file provider again puts it in the file, and it wins.
	f.call("PUT", "/api/providers", map[string]any{"default": "local", "providers": []any{local}}, 200, &view)
	f.stop()
	f.start()
	f.call("GET", "/api/providers", nil, 200, &view)
	if view.Default != "local" {
		t.Fatalf("default after choosing local and a restart = %q", view.Default)
	}
}

// Adding a provider without choosing a default keeps the default there was: the
// environment's (the web client sends no default then: providers.json cannot name it), and
// the file's first when an API client puts the new one in front (issue 24, point 12).
func TestAddingAProviderKeepsTheDefault(t *testing.T) {
	f := newFixture(t)
	f.tools = nil
	f.start()
	local := map[string]any{"name": "local", "kind": "openai", "baseUrl": "http://127.0.0.1:9/v1", "apiKey": "sk-local", "model": "m"}
	var view providersView
	f.call("PUT", "/api/providers", map[string]any{"providers": []any{local}}, 200, &view)
	if view.Default != "openai" || len(view.Providers) != 2 {
		t.Fatalf("after adding local the default is %q (providers %+v), want the environment's openai as before", view.Default, view.Providers)
	}

	g := newFixture(t)
	g.tools = nil
	g.cfg.Getenv = func(string) string { return "" } // no provider from the environment
	g.start()
	a := map[string]any{"name": "a", "kind": "openai", "baseUrl": "http://127.0.0.1:9/v1", "apiKey": "sk-a", "model": "m"}
	b := map[string]any{"name": "b", "kind": "openai", "baseUrl": "http://127.0.0.1:10/v1", "apiKey": "sk-b", "model": "m"}
	g.call("PUT", "/api/providers", map[string]any{"providers": []any{a}}, 200, &view)
	if view.Default != "a" {
		t.Fatalf("the only provider is not the default: %q", view.Default)
	}
	g.call("PUT", "/api/providers", map[string]any{"providers": []any{b, a}}, 200, &view)
	if view.Default != "a" {
		t.Fatalf("after adding b in front the default is %q, want a as before", view.Default)
	}
	// Chosen, it changes.
	g.call("PUT", "/api/providers", map[string]any{"default": "b", "providers": []any{b, a}}, 200, &view)
	if view.Default != "b" {
		t.Fatalf("after choosing b the default is %q", view.Default)
	}
}

// TestProvidersPutRefusals pins what PUT /api/providers says for each entry it refuses, and
// that a current providers.json that cannot be read is refused rather than overwritten
// (its keys could not be kept).
func TestProvidersPutRefusals(t *testing.T) {
	f := newFixture(t)
	f.tools = nil
	f.start()
	entry := func(kv ...any) map[string]any {
		e := map[string]any{"name": "x", "kind": "openai", "model": "m"}
		for i := 0; i < len(kv); i += 2 {
			e[kv[i].(string)] = kv[i+1]
		}
		return e
	}
	for _, c := range []struct {
		put  map[string]any
		want string
	}{
		{map[string]any{"providers": []map[string]any{entry("name", " ")}}, "providers[0]: give it a name"},
		{map[string]any{"providers": []map[string]any{entry("apiKey", "k", "clearKey", true)}}, "provider x: give apiKey or clearKey, not both"},
		{map[string]any{"providers": []map[string]any{entry("apiKeyEnv", "MY_KEY")}}, "provider x: apiKeyEnv MY_KEY is not withheld from tools"},
		{map[string]any{"providers": []map[string]any{entry("apiKeyEnv", "ANTHROPIC_API_KEY")}}, "provider x: its key variable ANTHROPIC_API_KEY is not set in the server's environment"},
		{map[string]any{"providers": []map[string]any{entry("model", "")}}, "provider x: give it a default model"},
		{map[string]any{"default": "y", "providers": []map[string]any{entry()}}, `default provider "y" is neither one of the providers given nor one configured by the environment`},
	} {
		body := f.call("PUT", "/api/providers", c.put, 400, nil)
		var e struct {
			Error struct{ Code, Message string }
		}
		_ = json.Unmarshal(body, &e)
		if e.Error.Code != codeBadRequest || !strings.Contains(e.Error.Message, c.want) {
			t.Errorf("PUT %v: %s, want %q", c.put, body, c.want)
		}
	}
	path := filepath.Join(f.home, provider.FileName)
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	body := f.call("PUT", "/api/providers", map[string]any{"providers": []map[string]any{entry()}}, 400, nil)
	if !strings.Contains(string(body), "cannot be read, so its keys cannot be kept") {
		t.Fatalf("unreadable %s: %s", path, body)
	}
	if data, _ := os.ReadFile(path); string(data) != "{not json" {
		t.Fatalf("%s was overwritten: %s", path, data)
	}
}

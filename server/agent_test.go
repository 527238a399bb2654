package server

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/provider/providertest"
)

// systemSent is the system message of the fake provider's request i.
func systemSent(t *testing.T, f *fixture, i int) string {
	t.Helper()
	reqs := f.fake.Requests()
	if i >= len(reqs) {
		t.Fatalf("request %d of %d", i, len(reqs))
	}
	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := reqs[i].Decode(&body); err != nil || len(body.Messages) == 0 || body.Messages[0].Role != "system" {
		t.Fatalf("request %d: %s (%v)", i, reqs[i].Body, err)
	}
	var s string
	if json.Unmarshal(body.Messages[0].Content, &s) != nil {
		s = string(body.Messages[0].Content)
	}
	return s
}

func (f *fixture) turnAndWait(sessionID, text string) {
	f.t.Helper()
	f.call("POST", "/api/sessions/"+sessionID+"/turns", map[string]any{"text": text}, 202, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := f.srv.harness.Wait(ctx, sessionID); err != nil {
		f.t.Fatal(err)
	}
}

// The systemPrompt setting replaces the default system prompt in the requests the
// provider receives, survives a restart, and "" brings the default back; the workspace's
// AGENTS.md joins whichever is in effect and GET …/instructions names it.
func TestSystemPromptSettingReachesProvider(t *testing.T) {
	f := newFixture(t)
	f.tools = nil
	if err := os.WriteFile(filepath.Join(f.ws, "AGENTS.md"), []byte("WS-RULE-42"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.start()
	ws, ses := f.session()
	reply := func() {
		f.fake.Push(providertest.NewOpenAIStream("test-model").Text("ok").Finish("stop").Usage(3, 1).Done().Reply())
	}

	var sp systemPromptView
	f.call("GET", "/api/settings/system-prompt", nil, 200, &sp)
	if sp.Default != harness.DefaultSystem || sp.Overridden {
		t.Fatalf("system prompt view %+v", sp)
	}
	reply()
	f.turnAndWait(ses.ID, "one")
	if sys := systemSent(t, f, 0); !strings.HasPrefix(sys, harness.DefaultSystem) || !strings.Contains(sys, "WS-RULE-42") {
		t.Fatalf("default system prompt sent:\n%s", sys)
	}

	var st Settings
	f.call("PATCH", "/api/settings", map[string]any{"systemPrompt": "CUSTOM-PROMPT: be terse."}, 200, &st)
	if st.SystemPrompt != "CUSTOM-PROMPT: be terse." {
		t.Fatalf("settings %+v", st)
	}
	reply()
	f.turnAndWait(ses.ID, "two")
	sys := systemSent(t, f, 1)
	if !strings.HasPrefix(sys, "CUSTOM-PROMPT: be terse.") || strings.Contains(sys, "read-file before you change it") || !strings.Contains(sys, "WS-RULE-42") {
		t.Fatalf("overridden system prompt sent:\n%s", sys)
	}

	var in harness.Instructions
	f.call("GET", "/api/workspaces/"+ws.ID+"/instructions", nil, 200, &in)
	if len(in.Files) != 1 || in.Files[0].Path != filepath.Join(f.ws, "AGENTS.md") || in.Files[0].Scope != "workspace" || in.Files[0].Bytes != 10 {
		t.Fatalf("instructions %+v", in)
	}

	body := f.call("PATCH", "/api/settings", map[string]any{"systemPrompt": strings.Repeat("x", MaxSystemPromptBytes+1)}, 400, nil)
	if !strings.Contains(string(body), "systemPrompt") {
		t.Fatalf("refusal %s", body)
	}

	// Kept across a restart.
	f.stop()
	f.start()
	f.call("GET", "/api/settings/system-prompt", nil, 200, &sp)
	if !sp.Overridden || sp.Current != "CUSTOM-PROMPT: be terse." {
		t.Fatalf("after restart %+v", sp)
	}
	f.call("PATCH", "/api/settings", map[string]any{"systemPrompt": ""}, 200, &st)
	reply()
	f.turnAndWait(ses.ID, "three")
	if sys := systemSent(t, f, 2); !strings.HasPrefix(sys, harness.DefaultSystem) {
		t.Fatalf("after clearing:\n%s", sys)
	}
}

// POST /api/sessions/{id}/compact summarizes the older messages with the session's model
// and stores a compaction part the messages list shows; a session with too little to
// summarize is 409. A provider's contextWindow set through PUT /api/providers is what the
// harness compacts to, and a model's known window applies when none is set.
func TestCompactEndpointAndContextWindow(t *testing.T) {
	f := newFixture(t)
	f.tools = nil
	f.start()
	_, ses := f.session()
	f.call("POST", "/api/sessions/"+ses.ID+"/compact", nil, 409, nil)
	for i := range 3 {
		f.fake.Push(providertest.NewOpenAIStream("test-model").Text("ok").Finish("stop").Usage(3, 1).Done().Reply())
		f.turnAndWait(ses.ID, strings.Repeat("long words ", 100)+string(rune('A'+i)))
	}
	f.fake.Push(providertest.NewOpenAIStream("test-model").Text("SUMMARY-API").Finish("stop").Usage(3, 1).Done().Reply())
	var info struct {
		UpToSeq  int64 `json:"upToSeq"`
		Messages int   `json:"messages"`
		Manual   bool  `json:"manual"`
	}
	f.call("POST", "/api/sessions/"+ses.ID+"/compact", nil, 200, &info)
	if info.Messages < 2 || !info.Manual || info.UpToSeq == 0 {
		t.Fatalf("compaction %+v", info)
	}
	var msgs struct {
		Messages []struct {
			Role  string
			Parts []struct{ Kind, Text string }
		}
	}
	f.call("GET", "/api/sessions/"+ses.ID+"/messages", nil, 200, &msgs)
	last := msgs.Messages[len(msgs.Messages)-1]
	if last.Role != "system" || len(last.Parts) != 1 || last.Parts[0].Kind != "compaction" || last.Parts[0].Text != "SUMMARY-API" {
		t.Fatalf("last message %+v", last)
	}

	if w := f.srv.providers.ContextWindow("", "gpt-4o-mini"); w != 128000 {
		t.Fatalf("known window of gpt-4o-mini: %d", w)
	}
	if w := f.srv.providers.ContextWindow("", ""); w != 0 {
		t.Fatalf("window of an unknown model: %d", w)
	}
	f.call("PUT", "/api/providers", map[string]any{"providers": []map[string]any{{"name": "openai", "kind": "openai",
		"baseUrl": f.fake.BaseURL(), "apiKey": f.fake.Key, "model": "test-model", "contextWindow": 5000, "idleTimeoutSeconds": 30}}}, 200, nil)
	if w := f.srv.providers.ContextWindow("openai", ""); w != 5000 {
		t.Fatalf("configured window: %d", w)
	}
	var view providersView
	f.call("GET", "/api/providers", nil, 200, &view)
	if p := view.Providers[0]; p.ContextWindow != 5000 || p.IdleTimeoutSeconds != 30 {
		t.Fatalf("provider view %+v", p)
	}
	body := f.call("PUT", "/api/providers", map[string]any{"providers": []map[string]any{{"name": "openai", "kind": "openai",
		"baseUrl": f.fake.BaseURL(), "apiKey": f.fake.Key, "model": "test-model", "contextWindow": 100}}}, 400, nil)
	if !strings.Contains(string(body), "contextWindow 100 is too small") {
		t.Fatalf("refusal %s", body)
	}
}

// GET /api/search finds a session by the words of its turns; q is required.
func TestSearchEndpoint(t *testing.T) {
	f := newFixture(t)
	f.tools = nil
	f.start()
	_, ses := f.session()
	f.fake.Push(providertest.NewOpenAIStream("test-model").Text("The flux capacitor is charged.").Finish("stop").Usage(3, 1).Done().Reply())
	f.turnAndWait(ses.ID, "charge the capacitor please")
	var res struct {
		Sessions []struct {
			Session struct{ ID string }
			Matches []struct{ Snippet, Role string }
		}
	}
	f.call("GET", "/api/search?q=flux+capac", nil, 200, &res)
	if len(res.Sessions) != 1 || res.Sessions[0].Session.ID != ses.ID || len(res.Sessions[0].Matches) != 1 ||
		res.Sessions[0].Matches[0].Role != "assistant" || !strings.Contains(res.Sessions[0].Matches[0].Snippet, "\x02flux\x03") {
		t.Fatalf("search %+v", res)
	}
	f.call("GET", "/api/search?q=nothing+like+it", nil, 200, &res)
	if len(res.Sessions) != 0 {
		t.Fatalf("search %+v", res)
	}
	f.call("GET", "/api/search", nil, 400, nil)
}

// A session's view says the start of the person's last message, the tokens its answers
// used, and their cost once the settings price every model used.
func TestSessionPreviewTokensAndCost(t *testing.T) {
	f := newFixture(t)
	f.tools = nil
	f.start()
	_, ses := f.session()
	f.fake.Push(providertest.NewOpenAIStream("test-model").Text("one").Finish("stop").Usage(1000, 200).Done().Reply(),
		providertest.NewOpenAIStream("test-model").Text("two").Finish("stop").Usage(3000, 800).Done().Reply())
	f.turnAndWait(ses.ID, "first question")
	f.turnAndWait(ses.ID, "second question\nwith more")
	var v sessionView
	f.call("GET", "/api/sessions/"+ses.ID, nil, 200, &v)
	if v.Preview != "second question\nwith more" || v.TokensIn != 4000 || v.TokensOut != 1000 || v.Cost != nil ||
		len(v.Usage) != 1 || v.Usage[0].Model != "test-model" {
		t.Fatalf("view %+v", v)
	}
	f.call("PATCH", "/api/settings", map[string]any{"prices": map[string]any{"test-model": map[string]any{"input": 2.5, "output": 10}}}, 200, nil)
	var list struct{ Sessions []sessionView }
	f.call("GET", "/api/sessions", nil, 200, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].Cost == nil || *list.Sessions[0].Cost != 0.02 {
		t.Fatalf("list %+v", list.Sessions)
	}
	f.call("PATCH", "/api/settings", map[string]any{"prices": map[string]any{"x": map[string]any{"input": -1}}}, 400, nil)
}

// GET /api/providers/{name}/models reads the provider's own list and keeps it ten minutes
// (refresh=1 reads it again); a listed window is the one compaction uses; test answers
// whether the connection and the default model are right; probe lists the models of a
// provider not saved yet; a provider without a default model is not saved.
func TestProviderModelsTestAndProbe(t *testing.T) {
	f := newFixture(t)
	f.tools = nil
	f.fake.ModelList = `{"data":[{"id":"test-model","context_length":9000},{"id":"other-model"}]}`
	f.start()
	var res struct {
		Models []struct {
			ID            string
			ContextWindow int
		}
	}
	f.call("GET", "/api/providers/openai/models", nil, 200, &res)
	if len(res.Models) != 2 || res.Models[1].ID != "test-model" || res.Models[1].ContextWindow != 9000 {
		t.Fatalf("models %+v", res)
	}
	f.call("GET", "/api/providers/openai/models", nil, 200, &res)
	if n := len(f.fake.Requests()); n != 1 {
		t.Fatalf("%d requests: the list was not cached", n)
	}
	f.call("GET", "/api/providers/openai/models?refresh=1", nil, 200, &res)
	if n := len(f.fake.Requests()); n != 2 {
		t.Fatalf("%d requests after refresh", n)
	}
	if w := f.srv.providers.ContextWindow("", ""); w != 9000 {
		t.Fatalf("window from the list %d", w)
	}
	f.call("GET", "/api/providers/nowhere/models", nil, 404, nil)

	var tv testView
	f.call("POST", "/api/providers/openai/test", nil, 200, &tv)
	if !tv.OK || tv.Models != 2 || !tv.ModelListed || !strings.Contains(tv.Message, "Connected: 2 models") {
		t.Fatalf("test %+v", tv)
	}

	var probe struct {
		Test   testView
		Models []struct{ ID string }
	}
	// The stored key goes with a probe of the same provider at its own address only.
	f.call("POST", "/api/providers/probe", map[string]any{"name": "openai", "kind": "openai", "baseUrl": f.fake.BaseURL(), "model": "nope"}, 200, &probe)
	if !probe.Test.OK || len(probe.Models) != 2 || probe.Test.ModelListed || !strings.Contains(probe.Test.Message, "nope is not among them") {
		t.Fatalf("probe %+v", probe)
	}
	evil := providertest.NewOpenAI(t)
	evil.ModelList = `{"data":[]}`
	f.call("POST", "/api/providers/probe", map[string]any{"name": "openai", "kind": "openai", "baseUrl": evil.BaseURL()}, 200, &probe)
	if r := evil.Requests(); len(r) != 1 || r[0].Header.Get("Authorization") != "" {
		t.Fatalf("the stored key went to a new address: %+v", r)
	}
	f.call("POST", "/api/providers/probe", map[string]any{"name": "x", "kind": "openai", "baseUrl": f.fake.BaseURL(), "apiKey": "wrong"}, 200, &probe)
	if probe.Test.OK || !strings.Contains(probe.Test.Message, "Could not connect") {
		t.Fatalf("probe with a wrong key %+v", probe)
	}

	body := f.call("PUT", "/api/providers", map[string]any{"providers": []map[string]any{{"name": "local", "kind": "openai", "baseUrl": f.fake.BaseURL(), "apiKey": "k"}}}, 400, nil)
	if !strings.Contains(string(body), "give it a default model") {
		t.Fatalf("saved without a model: %s", body)
	}
}

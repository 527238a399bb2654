package provider_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/provider/providertest"
)

// The model lists of OpenAI-compatible servers (with OpenRouter's context_length and vLLM's
// max_model_len) and of Anthropic are read, sorted, with the windows they say or the known
// ones; a wrong key is the server's 401, as a *provider.Error.
func TestListModels(t *testing.T) {
	oai := providertest.NewOpenAI(t)
	oai.Key = testKey
	oai.ModelList = `{"object":"list","data":[{"id":"gpt-4o","object":"model","owned_by":"openai"},
		{"id":"meta/llama-x","context_length":131072,"name":"Llama X"},{"id":"qwen-local","max_model_len":32768},{"id":"mystery"}]}`
	got, err := provider.ListModels(context.Background(), provider.Config{Name: "o", Kind: provider.KindOpenAI, BaseURL: oai.BaseURL(), APIKey: testKey}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range got {
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, ",") != "gpt-4o,meta/llama-x,mystery,qwen-local" || got[0].ContextWindow != 128000 || got[1].ContextWindow != 131072 ||
		got[1].Name != "Llama X" || got[2].ContextWindow != 0 || got[3].ContextWindow != 32768 {
		t.Fatalf("models %+v", got)
	}
	if reqs := oai.Requests(); len(reqs) != 1 || reqs[0].Path != "/v1/models" || reqs[0].Header.Get("Authorization") != "Bearer "+testKey {
		t.Fatalf("requests %+v", reqs)
	}

	ant := providertest.NewAnthropic(t)
	ant.Key = testKey
	ant.ModelList = `{"data":[{"type":"model","id":"claude-sonnet-4-5","display_name":"Claude Sonnet 4.5"}],"has_more":false}`
	got, err = provider.ListModels(context.Background(), provider.Config{Name: "a", Kind: provider.KindAnthropic, BaseURL: ant.BaseURL(), APIKey: testKey}, nil)
	if err != nil || len(got) != 1 || got[0].ID != "claude-sonnet-4-5" || got[0].ContextWindow != 200000 || got[0].Name != "Claude Sonnet 4.5" {
		t.Fatalf("anthropic models %+v %v", got, err)
	}

	_, err = provider.ListModels(context.Background(), provider.Config{Name: "o", Kind: provider.KindOpenAI, BaseURL: oai.BaseURL(), APIKey: "wrong"}, nil)
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Status != 401 || !strings.Contains(err.Error(), "Incorrect API key") {
		t.Fatalf("wrong key: %v", err)
	}
}

// A server's error that is not JSON is quoted, cut at 300 bytes; an answer that is not a
// model list, and a server that cannot be reached, are *provider.Error naming the URL; a
// model without an id is left out.
func TestListModelsBadAnswers(t *testing.T) {
	answer := map[string]func(w http.ResponseWriter){
		"/long/models": func(w http.ResponseWriter) { w.WriteHeader(502); io.WriteString(w, strings.Repeat("e", 400)) },
		"/html/models": func(w http.ResponseWriter) { io.WriteString(w, "<html>hi</html>") },
		"/noid/models": func(w http.ResponseWriter) {
			io.WriteString(w, `{"data":[{"id":""},{"id":"b"},{"id":"a","name":"a"}]}`)
		},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { answer[r.URL.Path](w) }))
	defer srv.Close()
	list := func(base string) ([]provider.ModelInfo, error) {
		return provider.ListModels(context.Background(), provider.Config{Name: "o", Kind: provider.KindOpenAI, BaseURL: base, APIKey: testKey}, nil)
	}
	var pe *provider.Error
	_, err := list(srv.URL + "/long")
	if !errors.As(err, &pe) || pe.Status != 502 || !strings.HasSuffix(pe.Message, ": "+strings.Repeat("e", 300)+"…") {
		t.Fatalf("long error: %v", err)
	}
	_, err = list(srv.URL + "/html")
	if !errors.As(err, &pe) || !strings.Contains(pe.Message, "GET "+srv.URL+"/html/models: the answer is not a model list") {
		t.Fatalf("not a list: %v", err)
	}
	got, err := list(srv.URL + "/noid")
	if err != nil || len(got) != 2 || got[0].ID != "a" || got[0].Name != "" || got[1].ID != "b" {
		t.Fatalf("no id: %+v %v", got, err)
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	_, err = list(closed.URL)
	if !errors.As(err, &pe) || !strings.Contains(pe.Message, "GET "+closed.URL+"/models: ") || pe.Err == nil {
		t.Fatalf("unreachable: %v", err)
	}
}

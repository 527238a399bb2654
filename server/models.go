package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/jean2/jean2/provider"
)

// modelListTTL is how long a provider's model list is kept before it is asked again.
const modelListTTL = 10 * time.Minute

// modelLists caches the providers' own model lists, by provider name. Safe for concurrent
// use.
type modelLists struct {
	mu    sync.Mutex
	lists map[string]modelList
}

type modelList struct {
	cfg     provider.Config // the configuration the list was read with
	models  []provider.ModelInfo
	fetched time.Time
}

func (l *modelLists) get(name string, cfg provider.Config) ([]provider.ModelInfo, time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.lists[name]
	if !ok || e.cfg != cfg || time.Since(e.fetched) > modelListTTL {
		return nil, time.Time{}, false
	}
	return e.models, e.fetched, true
}

func (l *modelLists) put(name string, cfg provider.Config, models []provider.ModelInfo) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lists == nil {
		l.lists = map[string]modelList{}
	}
	now := time.Now()
	l.lists[name] = modelList{cfg: cfg, models: models, fetched: now}
	return now
}

// window is the context window a cached list says for model, 0 when none does.
func (l *modelLists) window(name, model string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range l.lists[name].models {
		if m.ID == model {
			return m.ContextWindow
		}
	}
	return 0
}

// Models returns the model list of the provider named name ("" the default), from the
// cache unless refresh is set or it is older than modelListTTL.
func (p *Providers) Models(ctx context.Context, name string, refresh bool) ([]provider.ModelInfo, time.Time, error) {
	p.mu.RLock()
	if name == "" {
		name = p.set.Default
	}
	cfg, ok := p.set.Lookup(name)
	p.mu.RUnlock()
	if !ok {
		return nil, time.Time{}, fmt.Errorf("%w: provider %q is not one of the configured providers (%s)", ErrNoProvider, name, p.names())
	}
	if !refresh {
		if models, at, ok := p.lists.get(name, cfg); ok {
			return models, at, nil
		}
	}
	models, err := provider.ListModels(ctx, cfg, p.opts)
	if err != nil {
		return nil, time.Time{}, err
	}
	return models, p.lists.put(name, cfg, models), nil
}

// getProviderModels is GET /api/providers/{name}/models[?refresh=1]: the provider's own
// model list, cached for ten minutes.
func (s *Server) getProviderModels(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	models, at, err := s.providers.Models(r.Context(), name, r.URL.Query().Get("refresh") != "")
	if errors.Is(err, ErrNoProvider) {
		return notFound("%v", err)
	}
	if err != nil {
		return errorf(http.StatusBadGateway, codeUnavailable, "the model list of provider %s could not be read: %v", name, err)
	}
	if models == nil {
		models = []provider.ModelInfo{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"provider": name, "models": models, "fetchedAt": at})
	return nil
}

// testView is POST /api/providers/{name}/test's answer.
type testView struct {
	OK     bool   `json:"ok"`
	Models int    `json:"models"`
	Model  string `json:"model,omitempty"` // the provider's default model
	// ModelListed says whether the default model is in the provider's list (false also
	// when the list is empty: some servers list nothing).
	ModelListed bool   `json:"modelListed"`
	Error       string `json:"error,omitempty"`
	Message     string `json:"message"`
}

// testProvider is POST /api/providers/{name}/test: the provider's model list is read
// (refreshed), which needs the address and the key to be right and costs no tokens.
func (s *Server) testProvider(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	cfg, ok := s.providers.Set().Lookup(name)
	if !ok {
		return notFound("provider %q is not one of the configured providers (%s)", name, s.providers.names())
	}
	v := testView{Model: cfg.Model}
	models, _, err := s.providers.Models(r.Context(), name, true)
	switch {
	case err != nil:
		v.Error = err.Error()
		v.Message = fmt.Sprintf("Provider %s could not be reached: %v", name, err)
	default:
		v.OK, v.Models = true, len(models)
		for _, m := range models {
			if m.ID == cfg.Model {
				v.ModelListed = true
			}
		}
		switch {
		case cfg.Model == "":
			v.Message = fmt.Sprintf("Connected: %d models listed. The provider has no default model: choose one.", len(models))
		case v.ModelListed || len(models) == 0:
			v.Message = fmt.Sprintf("Connected: %d models listed; the default model is %s.", len(models), cfg.Model)
		default:
			v.Message = fmt.Sprintf("Connected: %d models listed, but not the default model %s: check its name.", len(models), cfg.Model)
		}
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// probeBody is POST /api/providers/probe: a provider as the add/edit dialog has it, saved or
// not.
type probeBody struct {
	Name    string        `json:"name"`
	Kind    provider.Kind `json:"kind"`
	BaseURL string        `json:"baseUrl"`
	APIKey  string        `json:"apiKey"`
	Model   string        `json:"model"`
}

// probeProvider is POST /api/providers/probe: the model list of a provider not saved yet (or
// being edited), which tests its address and key and offers its models to choose the
// default from. A key the body does not give is the configured provider's of the same name
// only while the address stays its own: a stored key never goes to a new address this way
// (PUT /api/providers asks a person for that).
func (s *Server) probeProvider(w http.ResponseWriter, r *http.Request) error {
	var b probeBody
	if err := decodeBody(w, r, &b); err != nil {
		return err
	}
	if b.Name == "" {
		b.Name = "probe"
	}
	cfg := provider.Config{Name: b.Name, Kind: b.Kind, BaseURL: b.BaseURL, APIKey: provider.Secret(b.APIKey), Model: b.Model}
	if err := cfg.Check(); err != nil {
		return badRequest("%v", err)
	}
	if b.APIKey == "" {
		if cur, ok := s.providers.Set().Lookup(b.Name); ok && cur.Kind == b.Kind && effectiveBase(cur.Kind, cur.BaseURL) == effectiveBase(b.Kind, b.BaseURL) {
			cfg.APIKey = cur.APIKey
		}
	}
	v := testView{Model: b.Model}
	models, err := provider.ListModels(r.Context(), cfg, s.providers.opts)
	if err != nil {
		v.Error = err.Error()
		v.Message = fmt.Sprintf("Could not connect: %v", err)
		writeJSON(w, http.StatusOK, map[string]any{"test": v, "models": []provider.ModelInfo{}})
		return nil
	}
	v.OK, v.Models = true, len(models)
	for _, m := range models {
		if m.ID == b.Model {
			v.ModelListed = true
		}
	}
	v.Message = fmt.Sprintf("Connected: %d models listed.", len(models))
	if b.Model != "" && !v.ModelListed && len(models) > 0 {
		v.Message += fmt.Sprintf(" The model %s is not among them: check its name.", b.Model)
	}
	if models == nil {
		models = []provider.ModelInfo{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"test": v, "models": models})
	return nil
}

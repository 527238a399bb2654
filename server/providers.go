package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/jean2/jean2/llm"
	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/tool"
)

// ErrNoProvider is wrapped when a model is asked for and no provider is configured, or the
// one named is not.
var ErrNoProvider = errors.New("no LLM provider is configured")

// Providers is the server's live set of LLM providers: those of $JEAN2_HOME/providers.json
// and of the environment (provider.Load), replaced through the API. It is the harness's
// Models and serves ctx.llm. Safe for concurrent use.
type Providers struct {
	home    string
	getenv  func(string) string
	opts    *provider.Options
	startup []string // key variables withheld from tools when the host started

	mu    sync.RWMutex
	set   provider.Set
	built map[string]provider.Provider // made on first use; dropped when the set changes
}

// LoadProviders reads the providers configured for home. getenv is os.Getenv or a stand-in;
// opts is passed to every provider made (nil: the defaults).
func LoadProviders(home string, getenv func(string) string, opts *provider.Options) (*Providers, error) {
	set, err := provider.Load(home, getenv)
	if err != nil {
		return nil, err
	}
	return &Providers{home: home, getenv: getenv, opts: opts, set: set, startup: set.KeyEnvNames(),
		built: map[string]provider.Provider{}}, nil
}

// Set returns the configured providers.
func (p *Providers) Set() provider.Set {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.set
}

// Model returns the provider named providerName ("" for the default) and the model to ask
// for: model, else the provider's default model.
func (p *Providers) Model(_ context.Context, providerName, model string) (provider.Provider, string, error) {
	p.mu.RLock()
	name := providerName
	if name == "" {
		name = p.set.Default
	}
	cfg, ok := p.set.Lookup(name)
	prov, made := p.built[name]
	p.mu.RUnlock()
	if name == "" {
		return nil, "", fmt.Errorf("%w: set OPENAI_API_KEY or ANTHROPIC_API_KEY, write $JEAN2_HOME/%s, or PUT /api/providers", ErrNoProvider, provider.FileName)
	}
	if !ok {
		return nil, "", fmt.Errorf("%w: provider %q is not one of the configured providers (%s)", ErrNoProvider, name, p.names())
	}
	if model == "" {
		model = cfg.Model
	}
	if model == "" {
		return nil, "", fmt.Errorf("provider %s has no default model: give the session a model, or set the provider's model", name)
	}
	if made {
		return prov, model, nil
	}
	prov, err := provider.New(cfg, p.opts)
	if err != nil {
		return nil, "", err
	}
	p.mu.Lock()
	// Keep the provider only if the set did not change meanwhile (cfg is still current).
	if cur, ok := p.set.Lookup(name); ok && cur == cfg {
		if other, ok := p.built[name]; ok {
			prov = other
		} else {
			p.built[name] = prov
		}
	}
	p.mu.Unlock()
	return prov, model, nil
}

func (p *Providers) names() string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var names []string
	for _, c := range p.set.Providers {
		names = append(names, c.Name)
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// LLM serves a call's ctx.llm with the provider and model given ("" for the defaults at the
// time of each request), so a provider configured later is used without a restart.
func (p *Providers) LLM(providerName, model string) tool.LLM {
	return llm.FromText(sessionText{p: p, provider: providerName, model: model})
}

// sessionText resolves its provider at each request.
type sessionText struct {
	p               *Providers
	provider, model string
}

func (s sessionText) GenerateText(ctx context.Context, req tool.TextRequest) (string, error) {
	prov, model, err := s.p.Model(ctx, s.provider, s.model)
	if errors.Is(err, ErrNoProvider) {
		return "", fmt.Errorf("%w: %v", tool.ErrNoLLM, err)
	}
	if err != nil {
		return "", err
	}
	return provider.ForTools(prov, model).GenerateText(ctx, req)
}

// providerView is a provider as the API shows it: never its key.
type providerView struct {
	provider.Info
	Editable bool `json:"editable"`
}

type providersView struct {
	Default   string         `json:"default"`
	Providers []providerView `json:"providers"`
}

func (p *Providers) view() providersView {
	set := p.Set()
	file := filepath.Join(p.home, provider.FileName)
	out := providersView{Default: set.Default, Providers: []providerView{}}
	for _, info := range set.Redacted() {
		out.Providers = append(out.Providers, providerView{Info: info, Editable: info.Source == file})
	}
	return out
}

// providerEntry is one provider of PUT /api/providers.
type providerEntry struct {
	Name      string        `json:"name"`
	Kind      provider.Kind `json:"kind"`
	BaseURL   string        `json:"baseUrl,omitempty"`
	APIKey    string        `json:"apiKey,omitempty"`
	APIKeyEnv string        `json:"apiKeyEnv,omitempty"`
	Model     string        `json:"model,omitempty"`
	MaxTokens int           `json:"maxTokens,omitempty"`
	ClearKey  bool          `json:"clearKey,omitempty"`
}

type providersPut struct {
	Default   string          `json:"default,omitempty"`
	Providers []providerEntry `json:"providers"`
}

// Replace makes the providers of providers.json those of req, keeping a stored key for an
// entry that gives none, writes the file atomically (0600) and switches to the new set.
func (p *Providers) replace(req providersPut) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	path := filepath.Join(p.home, provider.FileName)
	old, _, err := provider.ReadFile(path, p.getenv)
	if err != nil {
		return badRequest("the current %s cannot be read, so its keys cannot be kept; fix or remove it first: %v", path, err)
	}
	oldKeys := map[string]string{}
	for _, e := range old.Providers {
		if e.APIKey != "" {
			oldKeys[e.Name] = e.APIKey
		}
	}
	f := provider.File{Default: strings.TrimSpace(req.Default), Providers: []provider.FileEntry{}}
	for i, e := range req.Providers {
		e.Name = strings.TrimSpace(e.Name)
		if e.Name == "" {
			return badRequest("providers[%d]: give it a name", i)
		}
		if e.APIKey != "" && e.ClearKey {
			return badRequest("provider %s: give apiKey or clearKey, not both", e.Name)
		}
		if e.APIKeyEnv != "" {
			// A variable that holds a key must be one the tools never see. The host's
			// environment was fixed when it started, so only names it withholds qualify.
			if !policy.ReservedEnv(e.APIKeyEnv) && !slices.Contains(p.startup, e.APIKeyEnv) {
				return badRequest("provider %s: apiKeyEnv %s is not withheld from tools; give the key as apiKey, use a variable such as OPENAI_API_KEY, or name it in %s and restart", e.Name, e.APIKeyEnv, provider.FileName)
			}
			if strings.TrimSpace(p.getenv(e.APIKeyEnv)) == "" {
				return badRequest("provider %s: its key variable %s is not set in the server's environment", e.Name, e.APIKeyEnv)
			}
		}
		key := e.APIKey
		if key == "" && e.APIKeyEnv == "" && !e.ClearKey {
			key = oldKeys[e.Name]
		}
		f.Providers = append(f.Providers, provider.FileEntry{Name: e.Name, Kind: e.Kind, BaseURL: strings.TrimSpace(e.BaseURL),
			APIKey: key, APIKeyEnv: e.APIKeyEnv, Model: strings.TrimSpace(e.Model), MaxTokens: e.MaxTokens})
	}
	if err := provider.WriteFile(p.home, f); err != nil {
		return badRequest("%v", err)
	}
	set, err := provider.Load(p.home, p.getenv)
	if err != nil {
		// WriteFile checked the entries; a failure here is the environment (JEAN2_PROVIDER).
		// Put the old file back so the server keeps a configuration that loads.
		_ = provider.WriteFile(p.home, old)
		return badRequest("%v", err)
	}
	p.set = set
	p.built = map[string]provider.Provider{}
	return nil
}

func (s *Server) getProviders(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, s.providers.view())
	return nil
}

func (s *Server) putProviders(w http.ResponseWriter, r *http.Request) error {
	var req providersPut
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	if err := s.providers.replace(req); err != nil {
		return err
	}
	view := s.providers.view()
	s.publishServer(r.Context(), "providers.changed", map[string]any{"default": view.Default})
	writeJSON(w, http.StatusOK, view)
	return nil
}

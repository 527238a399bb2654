package server

import (
	"context"
	"encoding/json"
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
	startup []string      // key variables withheld from tools when the host started
	keep    settingsStore // where a default that providers.json cannot name is kept; nil: nowhere
	// shared is the database that holds the cluster's providers.json (providers_shared.go);
	// nil on a lone instance, whose providers.json is its own.
	shared sharedSettingsStore

	mu    sync.RWMutex
	set   provider.Set
	built map[string]provider.Provider // made on first use; dropped when the set changes

	lists modelLists // the providers' own model lists (models.go)
}

// defaultProviderKey is the settings key of a default provider chosen through the API that
// providers.json cannot hold: one configured by the environment (the file's "default" must
// name one of the file's own providers).
const defaultProviderKey = "providers.default"

// LoadProviders reads the providers configured for home. getenv is os.Getenv or a stand-in;
// opts is passed to every provider made (nil: the defaults).
func LoadProviders(home string, getenv func(string) string, opts *provider.Options) (*Providers, error) {
	p := &Providers{home: home, getenv: getenv, opts: opts, built: map[string]provider.Provider{}}
	set, err := p.load(context.Background())
	if err != nil {
		return nil, err
	}
	p.set, p.startup = set, set.KeyEnvNames()
	return p, nil
}

// keepDefaultIn makes p keep a default chosen through the API among the environment's
// providers in db, and applies the one kept there.
func (p *Providers) keepDefaultIn(ctx context.Context, db settingsStore) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keep = db
	set, err := p.load(ctx)
	if err != nil {
		return err
	}
	p.set = set
	return nil
}

// load reads the configured providers; the default is the file's "default", else the one
// kept through the API (when still configured), else provider.Load's (JEAN2_PROVIDER, else
// the first).
func (p *Providers) load(ctx context.Context) (provider.Set, error) {
	set, err := provider.Load(p.home, p.getenv)
	if err != nil {
		return set, err
	}
	f, _, err := provider.ReadFile(filepath.Join(p.home, provider.FileName), p.getenv)
	if err != nil || f.Default != "" || p.keep == nil {
		return set, nil // provider.Load read the same file: its error would have come first
	}
	if kept := p.keptDefault(ctx); kept != "" {
		if _, ok := set.Lookup(kept); ok {
			set.Default = kept
		}
	}
	return set, nil
}

// keptDefault is the default kept through the API, "" for none.
func (p *Providers) keptDefault(ctx context.Context) string {
	raw, err := p.keep.Setting(ctx, defaultProviderKey)
	var name string
	if err != nil || json.Unmarshal(raw, &name) != nil {
		return ""
	}
	return name
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

// ContextWindow is the context window of a provider's model in tokens ("" names the
// default provider, and model "" its default model): the provider's contextWindow, else the
// model's known window, else 0 (unknown). The harness compacts sessions to fit it.
func (p *Providers) ContextWindow(providerName, model string) int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if providerName == "" {
		providerName = p.set.Default
	}
	cfg, ok := p.set.Lookup(providerName)
	if !ok {
		return 0
	}
	if model == "" {
		model = cfg.Model
	}
	if cfg.ContextWindow == 0 {
		// The provider's own list says best, once it was read.
		if w := p.lists.window(providerName, model); w > 0 {
			return w
		}
	}
	return cfg.Window(model)
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
	// ContextWindow, IdleTimeoutSeconds and NoImages are providers.json's (docs/providers.md).
	ContextWindow      int  `json:"contextWindow,omitempty"`
	IdleTimeoutSeconds int  `json:"idleTimeoutSeconds,omitempty"`
	NoImages           bool `json:"noImages,omitempty"`
	ClearKey           bool `json:"clearKey,omitempty"`
	// ConfirmKeyTo is a person's consent that a key this entry does not give itself (its
	// apiKeyEnv, or the key stored under its name) goes to this base URL, which it was not
	// sent to before. It must name the entry's base URL (the kind's usual one when baseUrl
	// is empty); the web client sends it only after its dialog (docs/api.md#providers).
	ConfirmKeyTo string `json:"confirmKeyTo,omitempty"`
}

// keyConfirm is an entry whose key would go to a base URL it did not go to before.
type keyConfirm struct {
	Provider string `json:"provider"`
	BaseURL  string `json:"baseUrl"`
	KeyFrom  string `json:"keyFrom"` // the variable's name, or "stored"
}

// effectiveBase is where a provider's requests go: its base URL, else its kind's usual one,
// without a trailing slash.
func effectiveBase(kind provider.Kind, base string) string {
	base = strings.TrimSpace(base)
	if base == "" {
		switch kind {
		case provider.KindOpenAI:
			base = provider.OpenAIBaseURL
		case provider.KindAnthropic:
			base = provider.AnthropicBaseURL
		}
	}
	return strings.TrimRight(base, "/")
}

type providersPut struct {
	Default   string          `json:"default,omitempty"`
	Providers []providerEntry `json:"providers"`
}

// Replace makes the providers of providers.json those of req, keeping a stored key for an
// entry that gives none, writes the file atomically (0600) and switches to the new set.
func (p *Providers) replace(ctx context.Context, req providersPut) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	path := filepath.Join(p.home, provider.FileName)
	old, _, err := provider.ReadFile(path, p.getenv)
	if err != nil {
		return badRequest("the current %s cannot be read, so its keys cannot be kept; fix or remove it first: %v", path, err)
	}
	routes := p.keyRoutes(old)
	var unconfirmed []keyConfirm
	f := provider.File{Providers: []provider.FileEntry{}}
	for i, e := range req.Providers {
		fe, confirm, err := p.fileEntry(i, e, routes)
		if err != nil {
			return err
		}
		if confirm != nil {
			unconfirmed = append(unconfirmed, *confirm)
		}
		f.Providers = append(f.Providers, fe)
	}
	if len(unconfirmed) > 0 {
		return confirmKeysError(unconfirmed)
	}
	def := strings.TrimSpace(req.Default)
	kept, keepChanged, err := p.chooseDefault(def, old, &f)
	if err != nil {
		return err
	}
	return p.commit(ctx, old, f, def, kept, keepChanged)
}

// keyRoutes is where each key went before a PUT: a stored key's provider → its base URL,
// and each key variable → the base URLs its value goes to now.
type keyRoutes struct {
	oldKeys  map[string]string
	oldBase  map[string]string
	envBases map[string][]string
}

func (p *Providers) keyRoutes(old provider.File) keyRoutes {
	r := keyRoutes{oldKeys: map[string]string{}, oldBase: map[string]string{}, envBases: map[string][]string{}}
	for _, e := range old.Providers {
		if e.APIKey != "" {
			r.oldKeys[e.Name] = e.APIKey
			r.oldBase[e.Name] = effectiveBase(e.Kind, e.BaseURL)
		}
	}
	// A key that an entry does not give itself may go only where it went, unless a person
	// confirms the new place: else anyone who can make this request could send the
	// environment's or a stored key to a server of theirs.
	for _, c := range p.set.Providers {
		if c.APIKeyEnv != "" {
			r.envBases[c.APIKeyEnv] = append(r.envBases[c.APIKeyEnv], effectiveBase(c.Kind, c.BaseURL))
		}
	}
	return r
}

// fileEntry checks entry i of a PUT and turns it into providers.json's entry, its key the
// one given or the one stored under its name. A key that would go to a base URL it did
// not go to before, unconfirmed, comes back as a keyConfirm.
func (p *Providers) fileEntry(i int, e providerEntry, routes keyRoutes) (provider.FileEntry, *keyConfirm, error) {
	e.Name = strings.TrimSpace(e.Name)
	if err := p.checkEntry(i, e); err != nil {
		return provider.FileEntry{}, nil, err
	}
	key := e.APIKey
	if key == "" && e.APIKeyEnv == "" && !e.ClearKey {
		key = routes.oldKeys[e.Name]
	}
	base := effectiveBase(e.Kind, e.BaseURL)
	from := ""
	switch {
	case e.APIKey != "": // given with the request: it goes where the request says
	case e.APIKeyEnv != "":
		if !slices.Contains(routes.envBases[e.APIKeyEnv], base) {
			from = e.APIKeyEnv
		}
	case key != "":
		if routes.oldBase[e.Name] != base {
			from = "stored"
		}
	}
	var confirm *keyConfirm
	if from != "" && strings.TrimRight(strings.TrimSpace(e.ConfirmKeyTo), "/") != base {
		confirm = &keyConfirm{Provider: e.Name, BaseURL: base, KeyFrom: from}
	}
	return provider.FileEntry{Name: e.Name, Kind: e.Kind, BaseURL: strings.TrimSpace(e.BaseURL),
		APIKey: key, APIKeyEnv: e.APIKeyEnv, Model: strings.TrimSpace(e.Model), MaxTokens: e.MaxTokens,
		ContextWindow: e.ContextWindow, IdleTimeoutSeconds: e.IdleTimeoutSeconds, NoImages: e.NoImages}, confirm, nil
}

// checkEntry refuses an entry without a name or a model, with both a key and clearKey, or
// whose key variable tools could see or the server does not have.
func (p *Providers) checkEntry(i int, e providerEntry) error {
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
	if strings.TrimSpace(e.Model) == "" {
		return badRequest("provider %s: give it a default model (GET /api/providers/%s/models lists the provider's models once it is saved with one; e.g. gpt-4o, claude-sonnet-4-5, llama3.1)", e.Name, e.Name)
	}
	return nil
}

// confirmKeysError asks a person to confirm each key that would go somewhere new.
func confirmKeysError(unconfirmed []keyConfirm) error {
	var parts []string
	for _, u := range unconfirmed {
		what := "the key stored for it"
		if u.KeyFrom != "stored" {
			what = "the key in " + u.KeyFrom
		}
		parts = append(parts, fmt.Sprintf("provider %s would send %s to %s, where it did not go before", u.Provider, what, u.BaseURL))
	}
	return &apiError{Status: http.StatusConflict, Code: codeConfirmKey,
		Message: strings.Join(parts, "; ") + ". A person must confirm this: send the same request with \"confirmKeyTo\" set to that base URL in the entry, or give the key itself as apiKey",
		Details: map[string]any{"confirm": unconfirmed}}
}

// chooseDefault places the default def: the file f holds it when it names one of the file's
// providers; one of the environment's is kept in the database (kept, keepChanged). Empty,
// the default stays where it is.
func (p *Providers) chooseDefault(def string, old provider.File, f *provider.File) (kept string, keepChanged bool, err error) {
	inFile := func(name string) bool {
		return slices.ContainsFunc(f.Providers, func(e provider.FileEntry) bool { return e.Name == name })
	}
	switch {
	case def == "":
		if inFile(old.Default) {
			f.Default = old.Default
		}
	case inFile(def):
		f.Default, keepChanged = def, true
	case p.fromEnvironment(def, *f):
		kept, keepChanged = def, true
	default:
		return "", false, badRequest("default provider %q is neither one of the providers given nor one configured by the environment (%s)", def, p.envNames(*f))
	}
	if keepChanged && p.keep == nil {
		return "", false, badRequest("default provider %q is configured by the environment; this server cannot keep it as the default: name it in JEAN2_PROVIDER", def)
	}
	return kept, keepChanged, nil
}

// commit writes f, keeps the default, loads the new set and tells the other instances;
// a failure at any step puts the old file back so the server keeps a configuration that
// loads and that the other instances share.
func (p *Providers) commit(ctx context.Context, old, f provider.File, def, kept string, keepChanged bool) error {
	if err := provider.WriteFile(p.home, f); err != nil {
		return badRequest("%v", err)
	}
	if keepChanged {
		raw, _ := json.Marshal(kept)
		if err := p.keep.PutSetting(ctx, defaultProviderKey, raw); err != nil {
			_ = provider.WriteFile(p.home, old)
			return fmt.Errorf("keep the default provider %q: %w", def, err)
		}
	}
	set, err := p.load(ctx)
	if err != nil {
		// WriteFile checked the entries; a failure here is the environment (JEAN2_PROVIDER).
		_ = provider.WriteFile(p.home, old)
		return badRequest("%v", err)
	}
	if def == "" {
		if set, err = p.holdDefault(ctx, &f, set); err != nil {
			_ = provider.WriteFile(p.home, old)
			return badRequest("%v", err)
		}
	}
	if err := p.push(ctx); err != nil {
		// The other instances would not see it: this one keeps what they have.
		_ = provider.WriteFile(p.home, old)
		return err
	}
	p.set = set
	p.built = map[string]provider.Provider{}
	return nil
}

// holdDefault keeps the default there was when a PUT names none but its providers would
// change it (a new entry put before the file's first, which was the default for want of
// one named): the file then names the old default, so adding a provider never silently
// makes it the default. set is what the file f just written loads as.
func (p *Providers) holdDefault(ctx context.Context, f *provider.File, set provider.Set) (provider.Set, error) {
	prev := p.set.Default
	inFile := slices.ContainsFunc(f.Providers, func(e provider.FileEntry) bool { return e.Name == prev })
	if prev == "" || set.Default == prev || !inFile {
		// Unchanged, or dropped with its entry; one of the environment's stays by itself.
		return set, nil
	}
	f.Default = prev
	if err := provider.WriteFile(p.home, *f); err != nil {
		return set, err
	}
	return p.load(ctx)
}

// fromEnvironment reports whether name is a provider the environment configures and the
// file f does not override.
func (p *Providers) fromEnvironment(name string, f provider.File) bool {
	for _, c := range provider.FromEnv(p.getenv) {
		if c.Name == name {
			return !slices.ContainsFunc(f.Providers, func(e provider.FileEntry) bool { return e.Name == name })
		}
	}
	return false
}

// envNames lists the environment's providers for a message.
func (p *Providers) envNames(f provider.File) string {
	var names []string
	for _, c := range provider.FromEnv(p.getenv) {
		if p.fromEnvironment(c.Name, f) {
			names = append(names, c.Name)
		}
	}
	if len(names) == 0 {
		return "the environment configures none"
	}
	return "the environment configures " + strings.Join(names, ", ")
}

func (s *Server) getProviders(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, s.providers.view())
	return nil
}

// eventProvidersChanged on the server log: the providers changed (through this instance's
// API); in a cluster the others read them back from the database.
const eventProvidersChanged = "providers.changed"

func (s *Server) putProviders(w http.ResponseWriter, r *http.Request) error {
	var req providersPut
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	if err := s.providers.replace(r.Context(), req); err != nil {
		return err
	}
	view := s.providers.view()
	s.publishServer(r.Context(), eventProvidersChanged, map[string]any{"default": view.Default})
	writeJSON(w, http.StatusOK, view)
	return nil
}

package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jean2/jean2/internal/fsutil"
)

// Kind is the wire protocol a provider speaks.
type Kind string

// Provider kinds.
const (
	KindOpenAI    Kind = "openai"    // OpenAI chat completions and compatible servers
	KindAnthropic Kind = "anthropic" // Anthropic Messages
)

// Default base URLs.
const (
	OpenAIBaseURL     = "https://api.openai.com/v1"
	AnthropicBaseURL  = "https://api.anthropic.com"
	OpenRouterBaseURL = "https://openrouter.ai/api/v1"
	OllamaBaseURL     = "http://127.0.0.1:11434/v1"
)

// FileName is the provider configuration file in $JEAN2_HOME.
const FileName = "providers.json"

// Secret is an API key. It prints, logs and marshals as "[redacted]"; only Reveal gives
// the key, and only the provider that sends it calls Reveal.
type Secret string

const redacted = "[redacted]"

// Reveal returns the key itself.
func (s Secret) Reveal() string { return string(s) }

// String is "[redacted]", or "" when there is no key.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString keeps %#v from printing the key.
func (s Secret) GoString() string { return `provider.Secret("` + s.String() + `")` }

// Format keeps every fmt verb from printing the key.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(s.String())) }

// MarshalJSON keeps encoding/json from writing the key.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// LogValue keeps log/slog from writing the key.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// Config is one configured provider.
type Config struct {
	Name      string // how sessions and requests name it: "openai", "local", …
	Kind      Kind
	BaseURL   string // empty: the kind's default
	APIKey    Secret
	APIKeyEnv string // the environment variable the key was read from, if any
	Model     string // the default model, used when a session names none
	MaxTokens int    // the default output limit of a request; 0: the provider's own
	// ContextWindow is the model's context window in tokens; 0: the known default of the
	// model (ContextWindowOf), if any.
	ContextWindow int
	// IdleTimeout is how long the model may send nothing before a request is abandoned;
	// 0: Options.IdleTimeout.
	IdleTimeout time.Duration
	// NoImages says the model takes no images (a text-only model on a local server, which
	// refuses a request carrying one): each image is sent as a line saying what it was.
	NoImages bool
	Source   string // where it was configured: "environment" or the file's path
}

// Format prints c as its Redacted view, whatever the verb: a Config printed or logged by
// mistake shows neither its key nor a password in its base URL.
func (c Config) Format(f fmt.State, _ rune) { fmt.Fprintf(f, "%+v", c.Redacted()) }

// LogValue logs c as its Redacted view.
func (c Config) LogValue() slog.Value { return slog.AnyValue(c.Redacted()) }

// MarshalJSON writes c as its Redacted view; providers.json is written from File.
func (c Config) MarshalJSON() ([]byte, error) { return json.Marshal(c.Redacted()) }

// Info is what may be shown of a Config: everything but the key.
type Info struct {
	Name      string `json:"name"`
	Kind      Kind   `json:"kind"`
	BaseURL   string `json:"baseUrl"`
	Model     string `json:"model,omitempty"`
	MaxTokens int    `json:"maxTokens,omitempty"`
	// ContextWindow is the configured window; 0 when the model's known default applies.
	ContextWindow      int    `json:"contextWindow,omitempty"`
	IdleTimeoutSeconds int    `json:"idleTimeoutSeconds,omitempty"`
	HasKey             bool   `json:"hasKey"`
	KeyEnv             string `json:"keyEnv,omitempty"`
	NoImages           bool   `json:"noImages,omitempty"`
	Source             string `json:"source"`
}

// Redacted returns what may be shown of c: never the key, only whether there is one.
func (c Config) Redacted() Info {
	base := c.BaseURL
	if base == "" {
		base = defaultBaseURL(c.Kind)
	}
	return Info{Name: c.Name, Kind: c.Kind, BaseURL: redactURL(base), Model: c.Model, MaxTokens: c.MaxTokens,
		ContextWindow: c.ContextWindow, IdleTimeoutSeconds: int(c.IdleTimeout / time.Second),
		HasKey: c.APIKey != "", KeyEnv: c.APIKeyEnv, NoImages: c.NoImages, Source: c.Source}
}

// redactURL hides a password a base URL might carry (https://user:pass@host).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

func defaultBaseURL(k Kind) string {
	switch k {
	case KindOpenAI:
		return OpenAIBaseURL
	case KindAnthropic:
		return AnthropicBaseURL
	}
	return ""
}

// Check says what is wrong with c, if anything.
func (c Config) Check() error {
	_, err := c.resolved(c.Kind)
	return err
}

// resolved checks c for a provider of kind and fills in the default base URL.
func (c Config) resolved(kind Kind) (Config, error) {
	if c.Name == "" {
		return c, errors.New("provider config has no name")
	}
	if c.Kind != KindOpenAI && c.Kind != KindAnthropic {
		return c, fmt.Errorf("provider %s: kind %q is not openai or anthropic", c.Name, c.Kind)
	}
	if c.Kind != kind {
		return c, fmt.Errorf("provider %s: kind %s given to the %s provider", c.Name, c.Kind, kind)
	}
	if c.BaseURL == "" {
		c.BaseURL = defaultBaseURL(c.Kind)
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return c, fmt.Errorf("provider %s: base URL %q is not an http(s) URL such as %s", c.Name, redactURL(c.BaseURL), defaultBaseURL(c.Kind))
	}
	if c.MaxTokens < 0 {
		return c, fmt.Errorf("provider %s: maxTokens %d is negative", c.Name, c.MaxTokens)
	}
	if c.ContextWindow < 0 || (c.ContextWindow > 0 && c.ContextWindow < MinContextWindow) {
		return c, fmt.Errorf("provider %s: contextWindow %d is too small: give the model's window in tokens (at least %d), or 0 for the model's known default",
			c.Name, c.ContextWindow, MinContextWindow)
	}
	if c.IdleTimeout < 0 || (c.IdleTimeout > 0 && c.IdleTimeout < time.Second) {
		return c, fmt.Errorf("provider %s: idleTimeoutSeconds must be at least 1 (or 0 for the default, %s)", c.Name, DefaultIdleTimeout)
	}
	return c, nil
}

// Options are what providers share beyond their Config. Nil means the defaults.
type Options struct {
	// HTTPClient sends the requests; nil: a client with no overall timeout (answers
	// stream for minutes; the request's context bounds them) that gives up on a server
	// that has not answered with headers within 10 minutes.
	HTTPClient *http.Client
	Retry      Retry
	// IdleTimeout is how long a model may send nothing (no headers, or nothing more of an
	// answer) before the request is abandoned with a clear error, for providers whose
	// Config gives none (default DefaultIdleTimeout).
	IdleTimeout time.Duration
}

func (o *Options) orDefault() Options {
	var out Options
	if o != nil {
		out = *o
	}
	if out.HTTPClient == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.ResponseHeaderTimeout = 10 * time.Minute
		out.HTTPClient = &http.Client{Transport: t}
	}
	out.Retry = out.Retry.withDefaults()
	if out.IdleTimeout <= 0 {
		out.IdleTimeout = DefaultIdleTimeout
	}
	out.Retry.idle = out.IdleTimeout
	return out
}

// streamPolicy is the retry policy of the provider c: the options' with c's idle timeout.
func (o Options) streamPolicy(c Config) Retry {
	r := o.Retry
	r.provider = c.Name
	if c.IdleTimeout > 0 {
		r.idle = c.IdleTimeout
	}
	return r
}

// New makes the provider c describes.
func New(c Config, opts *Options) (Provider, error) {
	switch c.Kind {
	case KindOpenAI:
		return NewOpenAI(c, opts)
	case KindAnthropic:
		return NewAnthropic(c, opts)
	}
	return nil, c.Check()
}

// Set is the configured providers, in order, and which one is the default.
type Set struct {
	Providers []Config
	Default   string // a name in Providers, or "" when there are none
}

// Lookup returns the provider named name.
func (s Set) Lookup(name string) (Config, bool) {
	for _, c := range s.Providers {
		if c.Name == name {
			return c, true
		}
	}
	return Config{}, false
}

// Redacted lists the providers as they may be shown.
func (s Set) Redacted() []Info {
	out := make([]Info, 0, len(s.Providers))
	for _, c := range s.Providers {
		out = append(out, c.Redacted())
	}
	return out
}

// KeyEnvNames returns the environment variables the providers read their keys from, so
// the host can withhold them from tools (a providers.json may name any variable).
func (s Set) KeyEnvNames() []string {
	var out []string
	for _, c := range s.Providers {
		if c.APIKeyEnv != "" && !slices.Contains(out, c.APIKeyEnv) {
			out = append(out, c.APIKeyEnv)
		}
	}
	return out
}

// SourceEnv is the Source of providers configured by environment variables.
const SourceEnv = "environment"

// FromEnv returns the providers the environment configures, in this order:
//
//	openai      OPENAI_API_KEY and/or OPENAI_BASE_URL (+ OPENAI_MODEL)
//	anthropic   ANTHROPIC_API_KEY and/or ANTHROPIC_BASE_URL (+ ANTHROPIC_MODEL)
//	openrouter  OPENROUTER_API_KEY (+ OPENROUTER_MODEL)
//	ollama      OLLAMA_HOST (+ OLLAMA_MODEL); no key
//
// getenv is os.Getenv or a stand-in.
func FromEnv(getenv func(string) string) []Config {
	var out []Config
	env := func(k string) string { return strings.TrimSpace(getenv(k)) }
	if key, base := env("OPENAI_API_KEY"), env("OPENAI_BASE_URL"); key != "" || base != "" {
		out = append(out, Config{Name: "openai", Kind: KindOpenAI, BaseURL: base, APIKey: Secret(key),
			APIKeyEnv: keyEnv(key, "OPENAI_API_KEY"), Model: env("OPENAI_MODEL"), Source: SourceEnv})
	}
	if key, base := env("ANTHROPIC_API_KEY"), env("ANTHROPIC_BASE_URL"); key != "" || base != "" {
		out = append(out, Config{Name: "anthropic", Kind: KindAnthropic, BaseURL: base, APIKey: Secret(key),
			APIKeyEnv: keyEnv(key, "ANTHROPIC_API_KEY"), Model: env("ANTHROPIC_MODEL"), Source: SourceEnv})
	}
	if key := env("OPENROUTER_API_KEY"); key != "" {
		out = append(out, Config{Name: "openrouter", Kind: KindOpenAI, BaseURL: OpenRouterBaseURL, APIKey: Secret(key),
			APIKeyEnv: "OPENROUTER_API_KEY", Model: env("OPENROUTER_MODEL"), Source: SourceEnv})
	}
	if host := env("OLLAMA_HOST"); host != "" {
		out = append(out, Config{Name: "ollama", Kind: KindOpenAI, BaseURL: ollamaBaseURL(host), Model: env("OLLAMA_MODEL"), Source: SourceEnv})
	}
	return out
}

func keyEnv(key, name string) string {
	if key == "" {
		return ""
	}
	return name
}

// ollamaBaseURL turns OLLAMA_HOST (as Ollama reads it: "host", "host:port", a URL, or a
// bind address such as 0.0.0.0) into the base URL of its OpenAI-compatible API.
func ollamaBaseURL(host string) string {
	scheme := "http"
	if s, rest, ok := strings.Cut(host, "://"); ok {
		scheme, host = s, rest
	}
	host, path, _ := strings.Cut(host, "/")
	h, port, err := net.SplitHostPort(host)
	if err != nil {
		h, port = host, "11434"
		if scheme == "https" {
			port = "443"
		}
	}
	if h == "" || h == "0.0.0.0" || h == "::" || h == "[::]" {
		h = "127.0.0.1"
	}
	base := scheme + "://" + net.JoinHostPort(strings.Trim(h, "[]"), port)
	if path = strings.Trim(path, "/"); path != "" {
		base += "/" + path
	}
	return base + "/v1"
}

// File is providers.json.
type File struct {
	// Default names the provider sessions use when they name none.
	Default   string      `json:"default,omitempty"`
	Providers []FileEntry `json:"providers"`
}

// FileEntry is one provider in providers.json. Give the key as apiKeyEnv (the name of an
// environment variable that holds it) or, less safely, as apiKey itself.
type FileEntry struct {
	Name      string `json:"name"`
	Kind      Kind   `json:"kind"`
	BaseURL   string `json:"baseUrl,omitempty"`
	APIKey    string `json:"apiKey,omitempty"`
	APIKeyEnv string `json:"apiKeyEnv,omitempty"`
	Model     string `json:"model,omitempty"`
	MaxTokens int    `json:"maxTokens,omitempty"`
	// ContextWindow is the model's window in tokens (0: the model's known default).
	ContextWindow int `json:"contextWindow,omitempty"`
	// IdleTimeoutSeconds is how long the model may send nothing (0: two minutes).
	IdleTimeoutSeconds int `json:"idleTimeoutSeconds,omitempty"`
	// NoImages: the model takes no images; they reach it as lines saying what they were.
	NoImages bool `json:"noImages,omitempty"`
}

// ReadFile reads and checks a providers.json. A missing file is no error: it reads as
// empty. Keys named by apiKeyEnv are read with getenv.
func ReadFile(path string, getenv func(string) string) (File, []Config, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return File{}, nil, nil
	}
	if err != nil {
		return File{}, nil, fmt.Errorf("read provider config: %w", err)
	}
	var f File
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return File{}, nil, fmt.Errorf("provider config %s: %s", path, describeJSONError(data, err))
	}
	cfgs, err := f.configs(path, getenv)
	if err != nil {
		return File{}, nil, fmt.Errorf("provider config %s: %w", path, err)
	}
	return f, cfgs, nil
}

// describeJSONError says where in data a decoding error is, by line and column.
func describeJSONError(data []byte, err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var off int64
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	default:
		return err.Error()
	}
	line, col := 1, 1
	for _, b := range data[:min(int(off), len(data))] {
		if b == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Sprintf("line %d, column %d: %v", line, col, err)
}

func (f File) configs(source string, getenv func(string) string) ([]Config, error) {
	var out []Config
	seen := map[string]bool{}
	for i, e := range f.Providers {
		where := fmt.Sprintf("provider %d", i+1)
		if e.Name != "" {
			where = fmt.Sprintf("provider %q", e.Name)
		}
		if e.Name == "" {
			return nil, fmt.Errorf("%s: give it a name", where)
		}
		if seen[e.Name] {
			return nil, fmt.Errorf("%s: the name is used twice", where)
		}
		seen[e.Name] = true
		if e.APIKey != "" && e.APIKeyEnv != "" {
			return nil, fmt.Errorf("%s: give apiKey or apiKeyEnv, not both", where)
		}
		c := Config{Name: e.Name, Kind: e.Kind, BaseURL: e.BaseURL, APIKey: Secret(e.APIKey), Model: e.Model,
			MaxTokens: e.MaxTokens, ContextWindow: e.ContextWindow, IdleTimeout: time.Duration(e.IdleTimeoutSeconds) * time.Second, NoImages: e.NoImages, Source: source}
		if e.IdleTimeoutSeconds < 0 {
			return nil, fmt.Errorf("%s: idleTimeoutSeconds %d is negative", where, e.IdleTimeoutSeconds)
		}
		if e.APIKeyEnv != "" {
			c.APIKeyEnv = e.APIKeyEnv
			if c.APIKey = Secret(strings.TrimSpace(getenv(e.APIKeyEnv))); c.APIKey == "" {
				return nil, fmt.Errorf("%s: its key variable %s is not set", where, e.APIKeyEnv)
			}
		}
		if err := c.Check(); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if f.Default != "" && !seen[f.Default] {
		return nil, fmt.Errorf("default provider %q is not one of the providers listed", f.Default)
	}
	return out, nil
}

// Load returns the providers configured for a jean2 home: those of home/providers.json
// first, then those of the environment (FromEnv) whose names the file does not use. The
// default is the file's "default", else JEAN2_PROVIDER, else the environment's first
// provider, else the file's first. The environment comes before the file's entries because
// entries are added to the file (through the API) after the server started with its
// environment: adding one must not silently make it the default.
func Load(home string, getenv func(string) string) (Set, error) {
	f, cfgs, err := ReadFile(filepath.Join(home, FileName), getenv)
	if err != nil {
		return Set{}, err
	}
	set := Set{Providers: cfgs, Default: f.Default}
	firstEnv := ""
	for _, c := range FromEnv(getenv) {
		if _, taken := set.Lookup(c.Name); !taken {
			set.Providers = append(set.Providers, c)
			if firstEnv == "" {
				firstEnv = c.Name
			}
		}
	}
	if set.Default != "" {
		return set, nil
	}
	switch name := strings.TrimSpace(getenv("JEAN2_PROVIDER")); {
	case name != "":
		if _, ok := set.Lookup(name); !ok {
			return Set{}, fmt.Errorf("JEAN2_PROVIDER names %q, which is not configured", name)
		}
		set.Default = name
	case firstEnv != "":
		set.Default = firstEnv
	case len(set.Providers) > 0:
		set.Default = set.Providers[0].Name
	}
	return set, nil
}

// WriteFile writes home/providers.json atomically, readable by its owner only: it may
// hold keys.
func WriteFile(home string, f File) error {
	if _, err := f.configs("", func(string) string { return "set" }); err != nil {
		return fmt.Errorf("write provider config: %w", err)
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("write provider config: %w", err)
	}
	path := filepath.Join(home, FileName)
	if err := fsutil.WriteFileDurable(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("write provider config %s: %w", path, err)
	}
	return nil
}

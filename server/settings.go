package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jean2/jean2/ask"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/tool"
)

// settingsKey is the store key the server's settings are kept under.
const settingsKey = "server"

// Settings are the server's preferences changed through the API (docs/api.md#settings).
type Settings struct {
	// AutoApprove is the highest risk the unattended policy grants (once) when no client is
	// attached to a session: none, low, medium, high or critical.
	AutoApprove string `json:"autoApprove"`
	// AskTimeoutSeconds is how long an ask waits for a person.
	AskTimeoutSeconds int `json:"askTimeoutSeconds"`
	// WorkRounds is the harness's work budget per turn; MaxRounds its hard ceiling.
	WorkRounds int `json:"workRounds"`
	MaxRounds  int `json:"maxRounds"`
	// DisabledBuiltins names built-in tools (read-file, grep, …) not offered, beside the
	// ones $JEAN2_HOME/config.json's "disabledBuiltins" turns off for every command.
	DisabledBuiltins []string `json:"disabledBuiltins,omitempty"`
	// SystemPrompt replaces the harness's system prompt (GET /api/settings/system-prompt
	// shows the default); "" keeps the default. The workspace folder and the AGENTS.md
	// files are added to either.
	SystemPrompt string `json:"systemPrompt,omitempty"`
	// AutoTitle names an untitled session after its first turn, by asking TitleModel (a
	// cheaper model of the session's provider; "" the session's own model).
	AutoTitle  bool   `json:"autoTitle"`
	TitleModel string `json:"titleModel,omitempty"`
	// Prices are models' prices per million tokens ({"gpt-4o":{"input":2.5,"output":10}}):
	// sessions and turns show their cost when every model they used has one.
	Prices map[string]Price `json:"prices,omitempty"`
}

// MaxSystemPromptBytes bounds the systemPrompt setting: it is sent with every request.
const MaxSystemPromptBytes = 64 << 10

// DefaultSettings are the settings of a server nobody configured.
func DefaultSettings() Settings {
	return Settings{AutoApprove: "none", AskTimeoutSeconds: 300, WorkRounds: 5, MaxRounds: 25, AutoTitle: true}
}

// check says what is wrong with st, in terms a person can act on.
func (st Settings) check() error {
	if _, err := ask.NewPolicy(st.AutoApprove); err != nil {
		return err
	}
	if st.AskTimeoutSeconds < 5 || st.AskTimeoutSeconds > 7*24*3600 {
		return fmt.Errorf("askTimeoutSeconds %d must be between 5 and 604800 (a week)", st.AskTimeoutSeconds)
	}
	if st.WorkRounds < 1 || st.WorkRounds > 1000 {
		return fmt.Errorf("workRounds %d must be between 1 and 1000", st.WorkRounds)
	}
	if st.MaxRounds < st.WorkRounds || st.MaxRounds > 1000 {
		return fmt.Errorf("maxRounds %d must be at least workRounds (%d) and at most 1000", st.MaxRounds, st.WorkRounds)
	}
	if len(st.SystemPrompt) > MaxSystemPromptBytes {
		return fmt.Errorf("systemPrompt is %d bytes, more than %d KiB: it is sent with every request; shorten it or move project rules to an AGENTS.md",
			len(st.SystemPrompt), MaxSystemPromptBytes>>10)
	}
	for model, p := range st.Prices {
		if strings.TrimSpace(model) == "" || p.Input < 0 || p.Output < 0 || p.Input > 1e6 || p.Output > 1e6 {
			return fmt.Errorf("prices[%q] = %+v: give a model name and input and output prices per million tokens, 0 or more", model, p)
		}
	}
	for _, n := range st.DisabledBuiltins {
		if strings.TrimSpace(n) == "" {
			return fmt.Errorf("disabledBuiltins holds an empty name: list built-in tool names such as \"grep\"")
		}
	}
	return nil
}

// settingsStore is what settings need of the database.
type settingsStore interface {
	Setting(ctx context.Context, key string) (json.RawMessage, error)
	PutSetting(ctx context.Context, key string, value json.RawMessage) error
}

// liveSettings holds the current settings for the code that reads them on every ask.
type liveSettings struct {
	db settingsStore

	mu  sync.RWMutex
	cur Settings
}

// loadSettings reads the kept settings over the defaults. A kept value that no longer
// passes the checks (written by another version) falls back to the defaults field by field
// rather than stopping the server.
func loadSettings(ctx context.Context, db settingsStore) (*liveSettings, error) {
	st := DefaultSettings()
	raw, err := db.Setting(ctx, settingsKey)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return nil, err
	default:
		kept := st
		if json.Unmarshal(raw, &kept) == nil && kept.check() == nil {
			st = kept
		}
	}
	return &liveSettings{db: db, cur: st}, nil
}

// reload reads the kept settings again (another instance may have changed them) and
// reports whether they differ from the ones held.
func (l *liveSettings) reload(ctx context.Context) (Settings, bool, error) {
	fresh, err := loadSettings(ctx, l.db)
	if err != nil {
		return Settings{}, false, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	a, _ := json.Marshal(l.cur)
	b, _ := json.Marshal(fresh.cur)
	if bytes.Equal(a, b) {
		return l.cur, false, nil
	}
	l.cur = fresh.cur
	return l.cur, true, nil
}

func (l *liveSettings) get() Settings {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.cur
}

// policy is the unattended decider of the current settings.
func (l *liveSettings) policy() tool.Asker {
	p, err := ask.NewPolicy(l.get().AutoApprove)
	if err != nil {
		return ask.Policy{} // checked on the way in; deny if it ever is not
	}
	return p
}

// settingsPatch is PATCH /api/settings: any subset of the fields.
type settingsPatch struct {
	AutoApprove       *string `json:"autoApprove"`
	AskTimeoutSeconds *int    `json:"askTimeoutSeconds"`
	WorkRounds        *int    `json:"workRounds"`
	MaxRounds         *int    `json:"maxRounds"`
	// DisabledBuiltins replaces the whole list; [] turns every built-in back on.
	DisabledBuiltins *[]string `json:"disabledBuiltins"`
	// SystemPrompt replaces the system prompt; "" restores the default.
	SystemPrompt *string `json:"systemPrompt"`
	AutoTitle    *bool   `json:"autoTitle"`
	TitleModel   *string `json:"titleModel"`
	// Prices replaces the whole table; {} clears it.
	Prices *map[string]Price `json:"prices"`
}

// update applies p, keeps the result and returns it.
func (l *liveSettings) update(ctx context.Context, p settingsPatch) (Settings, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.cur
	if p.AutoApprove != nil {
		st.AutoApprove = *p.AutoApprove
		if st.AutoApprove == "" {
			st.AutoApprove = "none"
		}
	}
	if p.AskTimeoutSeconds != nil {
		st.AskTimeoutSeconds = *p.AskTimeoutSeconds
	}
	if p.WorkRounds != nil {
		st.WorkRounds = *p.WorkRounds
	}
	if p.MaxRounds != nil {
		st.MaxRounds = *p.MaxRounds
	}
	if p.DisabledBuiltins != nil {
		st.DisabledBuiltins = slices.Clone(*p.DisabledBuiltins)
	}
	if p.Prices != nil {
		st.Prices = maps.Clone(*p.Prices)
	}
	if p.AutoTitle != nil {
		st.AutoTitle = *p.AutoTitle
	}
	if p.TitleModel != nil {
		st.TitleModel = strings.TrimSpace(*p.TitleModel)
	}
	if p.SystemPrompt != nil {
		st.SystemPrompt = *p.SystemPrompt
		if strings.TrimSpace(st.SystemPrompt) == "" {
			st.SystemPrompt = ""
		}
	}
	if err := st.check(); err != nil {
		return l.cur, badRequest("%v", err)
	}
	raw, err := json.Marshal(st)
	if err != nil {
		return l.cur, err
	}
	if err := l.db.PutSetting(ctx, settingsKey, raw); err != nil {
		return l.cur, err
	}
	l.cur = st
	return st, nil
}

// applySettings hands st to the parts that use it: asks made and turns started from now on
// follow it (autoApprove is read at each unattended decision).
func (s *Server) applySettings(st Settings) {
	s.hub.SetAskTimeout(time.Duration(st.AskTimeoutSeconds) * time.Second)
	s.harness.SetLimits(st.WorkRounds, st.MaxRounds)
	s.harness.SetSystem(st.SystemPrompt)
	s.harness.SetTitles(st.AutoTitle, st.TitleModel)
}

// applyDisabledBuiltins turns off the built-ins the settings name (and back on the ones
// they no longer name); the host reloads its list, so turns started from now on see it.
func (s *Server) applyDisabledBuiltins(ctx context.Context, names []string) error {
	if err := s.host.SetDisabledBuiltins(ctx, names); err != nil {
		return fmt.Errorf("apply disabledBuiltins: %w", err)
	}
	return nil
}

func (s *Server) getSettings(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, s.settings.get())
	return nil
}

func (s *Server) patchSettings(w http.ResponseWriter, r *http.Request) error {
	var p settingsPatch
	if err := decodeBody(w, r, &p); err != nil {
		return err
	}
	before := s.settings.get().DisabledBuiltins
	st, err := s.settings.update(r.Context(), p)
	if err != nil {
		return err
	}
	s.applySettings(st)
	if !slices.Equal(before, st.DisabledBuiltins) {
		if err := s.applyDisabledBuiltins(r.Context(), st.DisabledBuiltins); err != nil {
			return err
		}
	}
	s.publishServer(r.Context(), "settings.changed", st)
	writeJSON(w, http.StatusOK, st)
	return nil
}

package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/store"
)

// providersFileKey is the settings key under which, in a cluster, the database keeps the
// providers.json every instance uses (keys included, as the file has them). Each instance
// writes it to its own $JEAN2_HOME/providers.json and loads it from there, with its own
// environment for the keys named by apiKeyEnv.
const providersFileKey = "providers.file"

// shareIn makes the database the home of providers.json (several instances sharing it):
// the database's file replaces this instance's, or, when the database has none yet, this
// instance's file becomes the cluster's. Called once at start, before the host is made, so
// that the key variables the database's providers name are withheld from tools too.
func (p *Providers) shareIn(ctx context.Context, db sharedSettingsStore) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.shared = db
	path := filepath.Join(p.home, provider.FileName)
	local, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if local != nil {
		// Seed the database with this instance's file, unless another instance did first.
		if _, err := db.PutSettingIfAbsent(ctx, providersFileKey, local); err != nil {
			return fmt.Errorf("keep the providers of %s in the database: %w", path, err)
		}
	}
	if _, err := p.pullLocked(ctx, true); err != nil {
		return err
	}
	p.startup = mergeNames(p.startup, p.set.KeyEnvNames())
	return nil
}

// sharedSettingsStore is what the cluster's providers need of the database.
type sharedSettingsStore interface {
	settingsStore
	PutSettingIfAbsent(ctx context.Context, key string, value json.RawMessage) (bool, error)
}

// pull applies the database's providers.json here when it differs from this instance's
// (another instance changed the providers): it reports whether anything changed. On an
// instance that is not in a cluster it does nothing.
func (p *Providers) pull(ctx context.Context) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shared == nil {
		return false, nil
	}
	return p.pullLocked(ctx, false)
}

// aside: keep this instance's own file aside before replacing it (at start).
func (p *Providers) pullLocked(ctx context.Context, aside bool) (bool, error) {
	path := filepath.Join(p.home, provider.FileName)
	raw, err := p.shared.Setting(ctx, providersFileKey)
	if errors.Is(err, store.ErrNotFound) {
		raw = nil // no instance has providers.json: the environment's providers only
	} else if err != nil {
		return false, fmt.Errorf("read the cluster's providers: %w", err)
	}
	old, _, err := provider.ReadFile(path, p.getenv)
	if err != nil {
		return false, err
	}
	var f provider.File
	if raw != nil {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			return false, fmt.Errorf("the cluster's providers (setting %s in the database) are not a providers.json: %w; fix them with PUT /api/providers", providersFileKey, err)
		}
	}
	if raw != nil && !sameFile(old, f) {
		if aside {
			if err := keepAside(path); err != nil {
				return false, err
			}
		}
		if err := provider.WriteFile(p.home, f); err != nil {
			return false, fmt.Errorf("the cluster's providers: %w", err)
		}
	}
	set, err := p.load(ctx)
	if err != nil {
		// This instance cannot use them (e.g. a key variable missing from its
		// environment): keep what it had, say what is wrong.
		if raw != nil && !sameFile(old, f) {
			_ = provider.WriteFile(p.home, old)
		}
		return false, fmt.Errorf("the providers changed through another instance do not load here (give every instance the same environment): %w", err)
	}
	if slices.Equal(set.Providers, p.set.Providers) && set.Default == p.set.Default {
		return false, nil
	}
	p.set = set
	p.built = map[string]provider.Provider{}
	return true, nil
}

// push keeps the providers.json just written here as the cluster's (after replace).
func (p *Providers) push(ctx context.Context) error {
	if p.shared == nil {
		return nil
	}
	path := filepath.Join(p.home, provider.FileName)
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if err := p.shared.PutSetting(ctx, providersFileKey, data); err != nil {
		return fmt.Errorf("keep the providers in the database for the other instances: %w", err)
	}
	return nil
}

// sameFile reports whether two providers.json say the same.
func sameFile(a, b provider.File) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// keepAside copies an instance's own providers.json, about to be replaced by the cluster's
// at start, next to it (providers.json.before-<time>, 0600): what a person wrote there is
// not lost.
func keepAside(path string) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	aside := path + ".before-" + time.Now().UTC().Format("20060102T150405.000000000")
	if err := os.WriteFile(aside, data, 0o600); err != nil {
		return fmt.Errorf("keep %s aside as %s: %w", path, aside, err)
	}
	return nil
}

// mergeNames returns a with b's names it lacks.
func mergeNames(a, b []string) []string {
	out := slices.Clone(a)
	for _, n := range b {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

package mcpclient

import (
	"context"
	"reflect"
	"slices"
	"time"

	"github.com/jean2/jean2/host"
)

// Reload makes the manager run the servers of cfg: a server cfg adds is started (at once
// if Start ran), one it drops or changes is stopped (a changed one restarted with its new
// entry), and one it lists unchanged stays connected, its calls in flight untouched.
// loadErr replaces the unusable files listed. It reports whether anything changed, and
// then runs OnChange so the host lists the new set.
//
// The new set is swapped in under the lock before the old servers stop, so the host never
// lists a server being stopped as the current one.
func (m *Manager) Reload(cfg Config, loadErr error) bool {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return false
	}
	old := make(map[string]*Server, len(m.servers))
	for _, s := range m.servers {
		old[s.cfg.Name] = s
	}
	next := make([]*Server, 0, len(cfg.Servers))
	var added []*Server
	for _, c := range cfg.Servers {
		if s, ok := old[c.Name]; ok && reflect.DeepEqual(s.cfg, c) {
			next = append(next, s)
			delete(old, c.Name)
			continue
		}
		s := m.newServer(c)
		next = append(next, s)
		added = append(added, s)
	}
	stop := make([]*Server, 0, len(old))
	for _, s := range m.servers {
		if old[s.cfg.Name] == s {
			stop = append(stop, s)
		}
	}
	broken := brokenSources(loadErr)
	changed := len(added) > 0 || len(stop) > 0 || !sameBroken(m.broken, broken)
	m.servers, m.broken = next, broken
	started := m.started
	m.mu.Unlock()

	if started {
		for _, s := range added {
			s.start()
		}
	}
	closeServers(stop)
	if changed {
		m.opts.Logger.Info("mcp.json changed: MCP servers reloaded", "added", len(added), "stopped", len(stop), "kept", len(next)-len(added))
		m.notify()
	}
	return changed
}

// config is the configuration the servers run now.
func (m *Manager) config() Config {
	m.mu.Lock()
	defer m.mu.Unlock()
	var cfg Config
	for _, s := range m.servers {
		cfg.Servers = append(cfg.Servers, s.cfg)
	}
	return cfg
}

// sameBroken reports whether two lists of unusable files say the same.
func sameBroken(a, b []host.ToolSource) bool {
	return slices.EqualFunc(a, b, func(x, y host.ToolSource) bool {
		_, ex := x.Tools()
		_, ey := y.Tools()
		return x.Name() == y.Name() && ex.Error() == ey.Error()
	})
}

// DefaultWatchInterval is how often Watch reads the mcp.json files again.
const DefaultWatchInterval = 2 * time.Second

// Watch reads the configuration with load every interval (DefaultWatchInterval when 0)
// and Reloads the manager with it, until ctx ends (a file that cannot be used is listed with
// its error, and the servers go on as they were): an mcp.json a person edits takes effect
// without restarting jean2. Reading a small file is cheap, and polling sees an editor's
// save-by-rename and a file made after jean2 started, which a watch of the file would not.
func (m *Manager) Watch(ctx context.Context, interval time.Duration, load func() (Config, error)) {
	if interval <= 0 {
		interval = DefaultWatchInterval
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			cfg, err := load()
			if err != nil {
				// A file being written, or wrong for a moment, lists its error; its servers
				// go on until a good file says otherwise.
				cfg = m.config()
			}
			m.Reload(cfg, err)
		}
	}
}

package host

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// WatchOptions tune Watch. Zero values take the defaults.
type WatchOptions struct {
	// Debounce is how long the folder must be quiet after a change before it is reloaded
	// (default 30ms): an editor's save is often several writes.
	Debounce time.Duration
	// Rescan is the period of a full rescan that catches what watching misses (network
	// file systems, a watcher limit reached); default 60s, negative disables it.
	Rescan time.Duration
}

// Watch keeps the tool set live until ctx ends: a new, changed or deleted tool folder, or a
// changed $JEAN2_HOME/.env, is reloaded as soon as the writes settle, and everything is
// rescanned every Rescan. Watching that cannot start (no inotify, a limit reached) is
// logged, and the periodic rescan carries on alone.
func (h *Host) Watch(ctx context.Context, opts WatchOptions) error {
	if opts.Debounce <= 0 {
		opts.Debounce = 30 * time.Millisecond
	}
	if opts.Rescan == 0 {
		opts.Rescan = 60 * time.Second
	}
	var events <-chan fsnotify.Event
	var errs <-chan error
	w, err := fsnotify.NewWatcher()
	if err != nil {
		h.log.Warn("file watching is off; tools reload on the periodic rescan only", "error", err)
	} else {
		defer w.Close()
		events, errs = w.Events, w.Errors
		h.watchTree(w, h.layout.Tools)
		if err := w.Add(h.layout.Home); err != nil {
			h.log.Warn("not watching jean2's home for .env changes", "path", h.layout.Home, "error", err)
		}
	}
	var rescan <-chan time.Time
	if opts.Rescan > 0 {
		t := time.NewTicker(opts.Rescan)
		defer t.Stop()
		rescan = t.C
	}
	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	dirty := map[string]bool{}
	all := false
	if w != nil {
		// A folder made between the host's first load and the watches above sent no event:
		// one reload once they are in place finds it (else it waited for the rescan).
		all = true
		debounce.Reset(opts.Debounce)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if !h.noteEvent(w, ev, dirty, &all) {
				continue
			}
			debounce.Reset(opts.Debounce)
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			// An overflowed queue loses events: only a full reload is safe.
			h.log.Warn("file watcher", "error", err)
			all = true
			debounce.Reset(opts.Debounce)
		case <-debounce.C:
			only := dirty
			if all {
				only = nil
			}
			dirty, all = map[string]bool{}, false
			if err := h.reload(ctx, only); err != nil && !errors.Is(err, context.Canceled) {
				h.log.Error("reload tools", "error", err)
			}
		case <-rescan:
			if err := h.Reload(ctx); err != nil && !errors.Is(err, context.Canceled) {
				h.log.Error("rescan tools", "error", err)
			}
		}
	}
}

// noteEvent marks what ev changed (a tool folder in dirty, or all) and reports whether it
// matters. A folder created is watched too; a new tool folder's workers start during the
// debounce and the bundle (earlystart.go).
func (h *Host) noteEvent(w *fsnotify.Watcher, ev fsnotify.Event, dirty map[string]bool, all *bool) bool {
	folder, whole := h.affected(ev.Name)
	switch {
	case whole:
		*all = true
	case folder != "":
		dirty[folder] = true
	default:
		return false
	}
	if ev.Op.Has(fsnotify.Create) && w != nil {
		if fi, err := os.Stat(ev.Name); err == nil && fi.IsDir() {
			h.watchTree(w, ev.Name)
			if ev.Name == folder {
				h.startEarly(folder)
			}
		}
	}
	return true
}

// affected maps a changed path to the tool folder it belongs to, or says that everything
// must be reloaded (the .env file changed). Changes that cannot affect a tool (node_modules,
// hidden files, install scratch folders) map to nothing.
func (h *Host) affected(path string) (folder string, whole bool) {
	if path == h.layout.DotEnv {
		return "", true
	}
	rel, err := filepath.Rel(h.layout.Tools, path)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return "", false
	}
	parts := strings.Split(rel, string(filepath.Separator))
	for _, p := range parts[1:] {
		if p == "node_modules" || strings.HasPrefix(p, ".") {
			return "", false
		}
	}
	top := parts[0]
	if strings.HasPrefix(top, ".") || strings.HasSuffix(top, ".staging") || strings.HasSuffix(top, ".previous") {
		return "", false
	}
	return filepath.Join(h.layout.Tools, top), false
}

// watchTree watches dir and the folders below it that can hold a tool's sources.
func (h *Host) watchTree(w *fsnotify.Watcher, dir string) {
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		name := d.Name()
		if p != dir && (name == "node_modules" || strings.HasPrefix(name, ".")) {
			return filepath.SkipDir
		}
		if err := w.Add(p); err != nil {
			h.log.Warn("cannot watch folder; it reloads on the periodic rescan", "path", p, "error", err)
			return filepath.SkipDir
		}
		return nil
	})
}

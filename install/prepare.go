package install

import (
	"context"
	"log/slog"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/loader"
	"github.com/jean2/jean2/runtime/node"
)

// RuntimeOptions are the host's runtime settings (JEAN2_RUNTIME, JEAN2_NODE, JEAN2_BUN), so
// preparation picks the runtime, and so the installer, that the host will.
type RuntimeOptions struct {
	Preference string
	NodePath   string
	BunPath    string
}

// LoaderPreparer installs dependencies and bundles with the loader, into the same cache the
// host uses, so the host's Validate that follows finds both done and only test-loads.
type LoaderPreparer struct {
	loader *loader.Loader
	rt     RuntimeOptions
}

var _ Preparer = (*LoaderPreparer)(nil)

// NewLoaderPreparer makes a preparer for the layout's cache. logger may be nil.
func NewLoaderPreparer(l host.Layout, rt RuntimeOptions, logger *slog.Logger) *LoaderPreparer {
	return &LoaderPreparer{
		loader: loader.New(loader.Options{CacheDir: l.Cache, Logger: logger, Runtimes: loader.Runtimes{Node: rt.NodePath, Bun: rt.BunPath}}),
		rt:     rt,
	}
}

// Prepare installs the folder's dependencies and bundles it, reporting each stage as it
// starts. Errors are the loader's (*loader.Error) or the runtime detection's.
func (p *LoaderPreparer) Prepare(ctx context.Context, dir string, report func(Stage, string)) error {
	f := loader.Inspect(dir)
	if f.Err != nil {
		return f.Err
	}
	if f.Kind != loader.KindJS {
		return nil // the host says what it makes of other kinds
	}
	pref := f.RuntimePreference
	if pref == "" {
		pref = p.rt.Preference
	}
	rt, err := node.Detect(node.DetectOptions{Preference: pref, NodePath: p.rt.NodePath, BunPath: p.rt.BunPath})
	if err != nil {
		return err
	}
	_, err = p.loader.Load(ctx, f, loader.LoadOptions{Runtime: rt.Kind, Progress: func(stage, msg string) {
		switch stage {
		case loader.StageInstall:
			report(StageInstallDeps, msg)
		case loader.StageBundle:
			report(StageBundle, msg)
		}
	}})
	return err
}

package loader

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkLoadCached100 is a host start with 100 cached tools: Discover, then Load each
// (hash, stat the bundle). The host's target is 300 ms to ready.
func BenchmarkLoadCached100(b *testing.B) {
	tools := b.TempDir()
	for i := 0; i < 100; i++ {
		dir := filepath.Join(tools, fmt.Sprintf("tool-%03d", i))
		writeFiles(b, dir, map[string]string{
			"tool.ts":       fmt.Sprintf("import { helper } from './lib/helper';\nexport const definition = { name: 't%d', description: 'd', inputSchema: { type: 'object' } };\nexport async function execute() { return { success: true, result: helper() }; }\n", i),
			"lib/helper.ts": "export const helper = () => '" + strings.Repeat("x", 4000) + "';\n",
			"package.json":  `{"type": "module", "version": "1.0.0", "dependencies": {"@jean2/sdk": "^0.9.0"}}`,
			"README.md":     strings.Repeat("docs ", 2000),
		})
	}
	l := newTestLoader(b)
	ctx := context.Background()
	folders, err := Discover(tools)
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range folders {
		if _, err := l.Load(ctx, f, LoadOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	builds := l.builds.Load()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		folders, err := Discover(tools)
		if err != nil {
			b.Fatal(err)
		}
		for _, f := range folders {
			bundle, err := l.Load(ctx, f, LoadOptions{})
			if err != nil || !bundle.Cached {
				b.Fatalf("%v cached=%v", err, bundle != nil && bundle.Cached)
			}
		}
	}
	b.StopTimer()
	if l.builds.Load() != builds {
		b.Fatal("a cached load ran esbuild")
	}
}

// BenchmarkBundleOne is one cold bundle of a small tool with the SDK.
func BenchmarkBundleOne(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "echo")
	writeFiles(b, dir, map[string]string{
		"tool.ts":      jean2Tool,
		"lib/shout.ts": "export const shout = (s: string): string => s.toUpperCase();\n",
	})
	f := Inspect(dir)
	out := filepath.Join(b.TempDir(), "out.mjs")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if res := esbuildBundle(buildRequest{folder: f, outfile: out}); len(res.errors) > 0 {
			b.Fatal(res.errors[0].Text)
		}
	}
}

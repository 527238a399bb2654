// Package loader turns a folder under the tools directory into a bundled ES module a worker
// can import: it discovers tool folders, installs their npm dependencies (never the SDK
// packages, which the binary carries, see package sdkjs), bundles the entry with esbuild's Go
// API in-process, and caches bundles by a content hash so an unchanged folder is never
// bundled twice. It also keeps a small definition cache beside each bundle, so a host can
// list cached tools without starting a worker.
//
// A folder that cannot be loaded yields an *Error naming the folder, the stage (discover,
// install, bundle, cache) and, where it can, the file, line and column in the tool's own
// source, so a broken tool is listed with a precise error and never harms the others.
//
// Go tool folders (tool.go + go.mod) are only detected here; the host builds them.
package loader

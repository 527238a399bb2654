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
//
// # Cache layout
//
//	<CacheDir>/bundles/<hash>.mjs   the bundle: one ES module with an inline source map
//	<CacheDir>/bundles/<hash>.json  what the host stored with StoreMeta (its definition)
//	<CacheDir>/npm-cache/           npm's cache; bun-cache/ for bun
//	<CacheDir>/install-private/     one folder per running install: the installer's HOME,
//	                                TMPDIR and npmrc, removed when it ends
//
// The hash covers the folder's absolute path, its entry, every file except node_modules and
// .git (names, modes, contents), the dependency stamp, the SDK's hash, the esbuild version
// and the loader's output format. Source maps point at the tool's files by path, which is
// why the folder's path is part of the hash.
//
// # Dependencies
//
// package.json dependencies other than @jean2/sdk and @jxsuite/* are installed with npm
// (or bun, for tools that run on bun) from a filtered package.json in a hidden scratch
// directory beside the folder, with a minimal environment; the resulting node_modules,
// with the SDK's types written in for editors and a stamp of the dependency set, then
// replaces the folder's node_modules in one rename. The tool's own scripts never run, and
// the dependencies' install scripts run only when package.json declares
// "jean2": {"installScripts": true} and Options.InstallScripts approves the dependency set
// (InstallScripts.Key); otherwise --ignore-scripts. Local dependencies (file:, link:,
// paths, in overrides and lockfiles too) must lie in the folder. The installer gets a HOME,
// TMPDIR and npm configuration of its own (the registry lines of ~/.npmrc; its login lines
// only when no script runs), Options.ConfineInstall confines it, an install lasts at most
// Options.InstallTimeout, and nothing it started outlives it (process group, then the
// confinement's release).
//
// # Bundles
//
// The bundle targets Node 20 and runs on Bun as well. node:*, bun:* and bun stay imports.
// It holds only files whose real path lies in the tool folder (node_modules included) and
// the embedded SDK: esbuild runs in the host, so any other import, and a sourceMappingURL
// naming a file outside, is a build error naming the import and where it is. esbuild reads
// the folder's own tsconfig.json (or jsconfig.json) only, never a parent folder's, and no
// "extends".
// import.meta.url, .filename and .dirname (and Bun's .path and .dir) name the entry in the
// tool folder (the bundle lives in the cache), and a require made by createRequire from the
// tool folder serves CommonJS code that requires builtins. Node needs --enable-source-maps for stack traces
// to name the tool's files; Bun reads the inline map by itself.
package loader

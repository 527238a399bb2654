// Package policy owns the rules that decide what a tool may touch: how a path a tool gives
// is resolved, whether it lies inside the workspace (a real containment test with symlinks
// resolved), which paths are blocked or sensitive, and which environment variables a tool
// may see. It is a leaf package: the SDK (package tool), the file system a tool is handed
// (package toolfs) and the worker runtimes all ask it, so the rules live in one place.
package policy

// Package install puts tool folders into the tools directory: from a local folder, a
// .tar.gz/.tgz/.zip archive, an http(s) URL of one, or a name looked up in a tool index. It
// owns the install from the first byte downloaded to the final rename: checksums, the
// untrusted-archive rules, staging in <tools>/<name>.staging, validation through the host
// (dependencies, bundle, a test load in a worker), and the swap that replaces the installed
// version only when the new one loads. It also removes tools and compares installed
// versions with the index (outdated, update).
//
// Nothing is ever written into <tools>/<name> directly: a running server's watcher sees the
// finished folder appear in one rename, or nothing at all.
package install

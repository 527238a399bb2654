#!/usr/bin/env bash
# `go test ./...` of a small module through the shell built-in (confined, caches in jean2's
# home) against the same run outside any sandbox (issue 23's target: a second run within 2×
# of native). Each sub-benchmark starts with empty caches, so its first run (first-s)
# compiles the standard library: expect a minute or more.
set -euo pipefail
cd "$(dirname "$0")/.."
exec go test -run '^$' -bench 'ShellGoTest' -benchtime "${BENCHTIME:-5x}" -count "${COUNT:-1}" -timeout 60m ./builtin

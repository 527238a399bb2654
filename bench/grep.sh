#!/usr/bin/env bash
# Built-in grep against rg and grep -rn on the same 10,000-file tree (issue 13's target:
# within 2× of rg). Installs Debian's ripgrep when it is missing (as root or through sudo
# without a password); without it the rg comparison is skipped and says so.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v rg >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then apt_get=(apt-get); elif sudo -n true 2>/dev/null; then apt_get=(sudo -n apt-get); else apt_get=(); fi
  if [ ${#apt_get[@]} -gt 0 ]; then
    echo "bench: installing ripgrep (Debian package)"
    DEBIAN_FRONTEND=noninteractive "${apt_get[@]}" install -y --no-install-recommends ripgrep >/dev/null 2>&1 \
      || { DEBIAN_FRONTEND=noninteractive "${apt_get[@]}" update -qq >/dev/null 2>&1 || true;
           DEBIAN_FRONTEND=noninteractive "${apt_get[@]}" install -y --no-install-recommends ripgrep >/dev/null 2>&1 || true; }
  fi
fi
exec go test -run '^$' -bench 'Grep10k' -benchtime "${BENCHTIME:-10x}" -count "${COUNT:-3}" ./builtin

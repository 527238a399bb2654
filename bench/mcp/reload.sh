#!/usr/bin/env bash
# Save → the new version answers, through `jean2 mcp` over stdio driven by the TypeScript
# SDK client (bench/mcp/reload.mjs): SAVES saves of a tool's source (default 15), p50/p95 of
# the time from each write to the first answer of the new code; then the first call of a new
# tool folder (FIRSTS) and warm calls (WARM). Run with the sandbox as jean2 runs it by default
# (on this machine: Landlock, network namespace, cgroups, through the launcher) and, for
# comparison, with JEAN2_SANDBOX=off; the two alternate ROUNDS times (default 2).
#   bench/mcp/reload.sh
#   MODES=auto ROUNDS=3 bench/mcp/reload.sh        # the confined path only
#   JEAN2_BIN=/tmp/jean2-old bench/mcp/reload.sh   # a jean2 built elsewhere (before/after)
#   FIRST_VIA=listed bench/mcp/reload.sh           # first calls made once the tool is listed
#                                                  # (list_changed, tools/list), as clients do
# The unconfined reload benchmark of the host alone stays:
#   go test -run '^$' -bench ReloadLatency -benchtime 30x ./host
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -f .deps/node_modules/@modelcontextprotocol/sdk/package.json ] || ./scripts/setup
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -n "${JEAN2_BIN:-}" ]; then
  cp "$JEAN2_BIN" "$work/jean2"
else
  go build -o "$work/jean2" ./cmd/jean2
fi
mkdir -p "$work/scripts" "$work/ws"
cp bench/mcp/reload.mjs "$work/scripts/"
ln -s "$PWD/.deps/node_modules" "$work/scripts/node_modules"
export JEAN2_LOG=${JEAN2_LOG:-error}
echo "# $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) before"
for round in $(seq "${ROUNDS:-2}"); do
  for mode in ${MODES:-auto off}; do
    home="$work/home-$mode-$round"
    rm -rf "$home"
    mkdir -p "$home/tools"
    cp -r bench/mcp/tools/ping "$home/tools/ping"
    # One call first, so the tool is bundled and cached before anything is timed.
    JEAN2_HOME="$home" JEAN2_SANDBOX=$mode "$work/jean2" tools run ping --input '{"n":0}' --workspace "$work/ws" >/dev/null
    how=$(JEAN2_HOME="$home" JEAN2_SANDBOX=$mode "$work/jean2" mcp --workspace "$work/ws" </dev/null 2>&1 >/dev/null | head -1)
    [ "$round" = 1 ] && echo "# sandbox $mode: $how"
    printf 'sandbox=%-4s %s\n' "$mode" "$(JEAN2_HOME="$home" JEAN2_SANDBOX=$mode node "$work/scripts/reload.mjs" "$home/tools" "$work/jean2" mcp --workspace "$work/ws")"
  done
done
echo "# load average $(cut -d' ' -f1-3 /proc/loadavg) after"

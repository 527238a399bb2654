#!/usr/bin/env bash
# MCP benchmark: tools/call round trips per second from one TypeScript SDK client over
# stdio, to the trivial tool `ping` served by `jean2 mcp` (a TypeScript tool folder run in a
# worker, confined as jean2 confines workers by default) and by the official TypeScript SDK's
# own server (the same tool code in-process). Same client, same calls, one at a time unless
# INFLIGHT says otherwise; the two servers alternate ROUNDS times and a summary (median and
# range of each) closes the output.
#   bench/mcp/run.sh                      # CALLS=2000 INFLIGHT=1 ROUNDS=3
#   ROUNDS=6 bench/mcp/run.sh
#   INFLIGHT=8 bench/mcp/run.sh
#   JEAN2_BIN=/tmp/jean2-old bench/mcp/run.sh   # a jean2 built elsewhere (before/after)
#   HOP=1 bench/mcp/run.sh                # also jean2 calling its built-in todoread, in its
#                                         # own process: the same path without the worker hop
#   PERCALL=1 bench/mcp/run.sh            # also, each round, what a call costs jean2 and its
#                                         # worker: CPU and context switches (percall.mjs)
set -euo pipefail
cd "$(dirname "$0")/../.."
./scripts/setup
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -n "${JEAN2_BIN:-}" ]; then
  cp "$JEAN2_BIN" "$work/jean2"
else
  go build -o "$work/jean2" ./cmd/jean2
fi
mkdir -p "$work/home/tools" "$work/ws" "$work/scripts"
cp -r bench/mcp/tools/ping "$work/home/tools/ping"
cp bench/mcp/*.mjs "$work/scripts/"
ln -s "$PWD/.deps/node_modules" "$work/scripts/node_modules"
export JEAN2_HOME="$work/home" JEAN2_LOG=error
# One call first, so the tool is bundled and cached before anything is timed.
"$work/jean2" tools run ping --input '{"n":0}' --workspace "$work/ws" >/dev/null
# How the workers are confined (jean2 mcp says so on stderr when it starts).
"$work/jean2" mcp --workspace "$work/ws" </dev/null 2>&1 >/dev/null | sed 's/^/# /'
echo "# $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) before"
# Whether an idle CPU halts at once matters more than anything jean2 does (docs/performance.md,
# session 4): say how this machine idles.
if [ -r /sys/devices/system/cpu/cpuidle/current_driver ]; then
  poll=$(cat /sys/module/haltpoll/parameters/guest_halt_poll_ns 2>/dev/null || echo "n/a")
  echo "# cpuidle driver $(cat /sys/devices/system/cpu/cpuidle/current_driver), guest_halt_poll_ns $poll"
fi
results="$work/results"
for round in $(seq "${ROUNDS:-3}"); do
  printf 'jean2-mcp %s\n' "$(node "$work/scripts/bench.mjs" "$work/jean2" mcp --workspace "$work/ws")" | tee -a "$results"
  printf 'ts-sdk    %s\n' "$(node "$work/scripts/bench.mjs" node "$work/scripts/ts-server.mjs")" | tee -a "$results"
  if [ -n "${PERCALL:-}" ]; then
    printf '# per call %s\n' "$(node "$work/scripts/percall.mjs" "$work/jean2" mcp --workspace "$work/ws")"
  fi
  if [ -n "${HOP:-}" ]; then
    printf 'jean2-builtin %s\n' "$(TOOL=todoread node "$work/scripts/bench.mjs" "$work/jean2" mcp --workspace "$work/ws")" | tee -a "$results"
  fi
done
echo "# load average $(cut -d' ' -f1-3 /proc/loadavg) after"
node "$work/scripts/summary.mjs" "$results"

#!/usr/bin/env bash
# MCP over streamable HTTP: tools/call round trips per second from one TypeScript SDK client
# (StreamableHTTPClientTransport) to the trivial tool `ping`, served by `jean2 serve`'s /mcp
# (the tool in its confined Node worker, the API token sent as jean2 requires it) and by the
# official TypeScript SDK's streamable HTTP server (ts-http-server.mjs, the tool in-process).
# Same client and calls; INFLIGHT calls in flight (1 and 32 by default, each in turn); the
# servers alternate ROUNDS times and a summary closes the output. Two modes, each in turn:
#   session    2025-11-25 with a session (the SDK's per-session server);
#   stateless  no session: jean2 at 2026-07-28 (bench.mjs REVISION), the TypeScript SDK's
#              server in its stateless mode (a server and transport per request, JSON answers).
#   bench/mcp/run-http.sh                 # CALLS=2000 ROUNDS=3 INFLIGHTS="1 32" MODES="session stateless"
#   JEAN2_BIN=/tmp/jean2-old bench/mcp/run-http.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
./scripts/setup
work=$(mktemp -d)
pids=()
# jean2 serve unmounts its sessions' temporary folders as it stops: wait for it before rm.
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait; rm -rf "$work"' EXIT
if [ -n "${JEAN2_BIN:-}" ]; then cp "$JEAN2_BIN" "$work/jean2"; else go build -o "$work/jean2" ./cmd/jean2; fi
mkdir -p "$work/home/tools" "$work/ws" "$work/scripts"
cp -r bench/mcp/tools/ping "$work/home/tools/ping"
cp bench/mcp/*.mjs "$work/scripts/"
ln -s "$PWD/.deps/node_modules" "$work/scripts/node_modules"
export JEAN2_HOME="$work/home" JEAN2_LOG=error
"$work/jean2" tools run ping --input '{"n":0}' --workspace "$work/ws" >/dev/null
(cd "$work/ws" && exec "$work/jean2" serve --port 0) 2>"$work/serve.log" &
pids+=($!)
node "$work/scripts/ts-http-server.mjs" >"$work/ts.log" &
pids+=($!)
STATELESS=1 node "$work/scripts/ts-http-server.mjs" >"$work/ts-stateless.log" &
pids+=($!)
for _ in $(seq 100); do
  grep -q 'listening on' "$work/serve.log" 2>/dev/null && grep -q listening "$work/ts.log" 2>/dev/null &&
    grep -q listening "$work/ts-stateless.log" 2>/dev/null && break
  sleep 0.1
done
jean2_url="$(grep -o 'listening on http://[^ ]*' "$work/serve.log" | cut -d' ' -f3)/mcp"
ts_url="http://127.0.0.1:$(cut -d' ' -f2 "$work/ts.log")/mcp"
ts_stateless_url="http://127.0.0.1:$(cut -d' ' -f2 "$work/ts-stateless.log")/mcp"
token=$(cat "$work/home/token")
grep 'tool workers' "$work/serve.log" | sed 's/^/# /'
echo "# $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) before"
for mode in ${MODES:-session stateless}; do
  revision="" ts="$ts_url"
  if [ "$mode" = stateless ]; then revision=2026-07-28 ts="$ts_stateless_url"; fi
  for inflight in ${INFLIGHTS:-1 32}; do
    results="$work/results-$mode-$inflight"
    echo "# $mode, $inflight in flight"
    for round in $(seq "${ROUNDS:-3}"); do
      printf 'jean2-http %s\n' "$(REVISION=$revision INFLIGHT=$inflight BENCH_TOKEN=$token node "$work/scripts/bench.mjs" "$jean2_url")" | tee -a "$results"
      printf 'ts-sdk-http %s\n' "$(INFLIGHT=$inflight node "$work/scripts/bench.mjs" "$ts")" | tee -a "$results"
    done
    node "$work/scripts/summary.mjs" "$results"
  done
done
echo "# load average $(cut -d' ' -f1-3 /proc/loadavg) after"

#!/bin/sh
# The conformance suite's client scenarios run this with the server URL as the last
# argument. It hands jean2 mcp probe the scenario's pre-registered client, when the scenario
# gives one (MCP_CONFORMANCE_CONTEXT), and lets curl stand in for the person's browser: curl
# follows the authorization server's redirect to jean2's loopback listener, as a browser
# would after the person allowed access.
set -e
pre=""
if [ -n "$MCP_CONFORMANCE_CONTEXT" ]; then
  pre=$(node -e 'const c = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT); if (c.client_id) process.stdout.write("--client-id " + c.client_id + (c.client_secret ? " --client-secret " + c.client_secret : ""))')
fi
# shellcheck disable=SC2086
exec "$JEAN2_BIN" mcp probe --browser "curl -s -L -o /dev/null" \
  --client-metadata-url https://conformance-test.local/client-metadata.json $pre "$@"

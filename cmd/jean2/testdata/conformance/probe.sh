#!/bin/sh
# The conformance suite's client scenarios run this with the server URL as the last
# argument. It hands jean2 mcp probe what the scenario gives (MCP_CONFORMANCE_CONTEXT): its
# pre-registered client (for the client-credentials scenarios, the machine sign-in a CI job's
# mcp.json would configure: grant client_credentials, with the secret or the private key it
# gives) and the arguments of the tool calls it wants made; and lets curl
# stand in for the person's browser: curl follows the authorization server's redirect to
# jean2's loopback listener, as a browser would after the person allowed access.
# json-schema-2020-12-preservation asks the client to send a tool's input schema back as it
# holds it: `jean2 mcp probe --schema` prints it as jean2 keeps it, and a second probe sends it.
set -e
url=$(eval echo "\${$#}")
probe() {
  case "$MCP_CONFORMANCE_SCENARIO" in
  auth/client-credentials*) "$JEAN2_BIN" mcp probe "$@" ;; # a machine: no browser, no metadata document
  *) "$JEAN2_BIN" mcp probe --browser "curl -s -L -o /dev/null" \
    --client-metadata-url https://conformance-test.local/client-metadata.json "$@" ;;
  esac
}
if [ "$MCP_CONFORMANCE_SCENARIO" = json-schema-2020-12-preservation ]; then
  schema=$(probe --schema json_schema_2020_12_tool "$url")
  probe --only json_schema_echo --args "json_schema_echo={\"schema\":$schema}" "$url"
  exit
fi
# One argument per line, from the context (node parses the JSON).
KEYDIR=$(mktemp -d)
export KEYDIR
trap 'rm -rf "$KEYDIR"' EXIT
given=$(node -e '
  const c = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || "{}");
  const out = [];
  if (c.client_id) out.push("--client-id", c.client_id);
  if (c.client_secret) out.push("--client-secret", c.client_secret);
  if (process.env.MCP_CONFORMANCE_SCENARIO.startsWith("auth/client-credentials")) out.push("--grant", "client_credentials");
  if (c.private_key_pem) {
    const f = require("path").join(process.env.KEYDIR, "client.pem");
    require("fs").writeFileSync(f, c.private_key_pem, { mode: 0o600 });
    out.push("--private-key-file", f);
    if (c.signing_algorithm) out.push("--signing-algorithm", c.signing_algorithm);
  }
  for (const call of c.toolCalls || []) out.push("--args", call.name + "=" + JSON.stringify(call.arguments));
  process.stdout.write(out.join("\n")); // JSON.stringify leaves no newline in a value
')
old_ifs=$IFS
IFS='
'
set -f # "SELECT * FROM users" is an argument, not a pattern
# shellcheck disable=SC2086
set -- $given "$@"
IFS=$old_ifs
probe "$@"

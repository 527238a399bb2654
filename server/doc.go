// Package server is jean2's agent server: the HTTP and WebSocket API of docs/api.md over
// the store (workspaces, sessions, messages, ledgers, grants, events), the tool host, the
// hub (event fan-out and pending asks), the harness (turns) and undo (Restore to here);
// MCP over streamable HTTP at /mcp; the web client at /.
//
// Open builds the whole server from a jean2 home and Handler serves it; jean2 serve is a
// thin command around the two. Auth: a loopback bind needs no token, any other bind needs
// an API token (Authorization: Bearer, or the jean2_token cookie set by /auth?token=…);
// every mutating request and WebSocket upgrade must come from the server's own origin.
package server

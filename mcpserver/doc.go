// Package mcpserver serves a host's tools to MCP clients, over stdio (jean2 mcp) or
// streamable HTTP (an http.Handler for jean2 serve to mount at /mcp).
//
// Every tools/call goes through host.Invoke like any other call, so a tool sees the same
// context whoever calls it. What the MCP client can do stands in for the powers that need a
// person or a model:
//
//   - ctx.ask becomes an elicitation in form mode (a permission ask becomes a confirmation
//     form). A client on protocol revision 2026-07-28 or later gets it as an input request
//     of a multi-round-trip result, the call parked until the client retries with the
//     answer; an older client gets a classic elicitation/create request. A client that
//     declared no elicitation gets the session policy (deny by default) and a clear error.
//   - ctx.llm uses the host's provider; when the host has none and the client offers
//     sampling, the client's model (sampling/createMessage).
//   - ctx.progress becomes progress notifications (when the request carried a progress
//     token), the tool's log lines log notifications, and a client's cancellation aborts
//     the call's signal.
//
// A result's text content is what a model would see (host.Outcome.ModelText: the text of a
// text-shaped result, else JSON; overflow cut to a file); structuredContent carries the
// result when the definition has an output schema; the visualization travels in
// _meta["jean2/visualization"].
package mcpserver

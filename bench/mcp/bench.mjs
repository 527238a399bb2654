// tools/call round trips per second from one TypeScript SDK client over stdio, or over
// streamable HTTP when the first argument is a URL (BENCH_TOKEN: a bearer token to send).
// Usage: node bench.mjs COMMAND [ARGS...] | URL   (env CALLS, WARMUP, INFLIGHT)
// REVISION=2026-07-28 (HTTP only): the stateless revision, which the SDK's client (1.32.2)
// does not negotiate itself: no initialize, the revision's headers and _meta on each call.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { Protocol } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [command, ...args] = process.argv.slice(2);
const calls = Number(process.env.CALLS ?? 2000);
const warmup = Number(process.env.WARMUP ?? 200);
const inflight = Number(process.env.INFLIGHT ?? 1);
// TOOL: another tool to call with no arguments (a jean2 built-in such as todoread runs in
// jean2's own process: the same path without the worker's hop).
const toolName = process.env.TOOL ?? 'ping';

const revision = process.env.REVISION;
const clientInfo = { name: 'bench', version: '1.0.0' };
const client = new Client(clientInfo);
let meta;
if (/^https?:/.test(command)) {
  const headers = process.env.BENCH_TOKEN ? { authorization: 'Bearer ' + process.env.BENCH_TOKEN } : {};
  if (revision) {
    // 2026-07-28: each request on its own, named by the Mcp-Method and Mcp-Name headers.
    const named = (url, init) => {
      const m = JSON.parse(init.body);
      const h = new Headers(init.headers);
      h.set('mcp-method', m.method);
      if (m.params?.name) h.set('mcp-name', m.params.name);
      return fetch(url, { ...init, headers: h });
    };
    const t = new StreamableHTTPClientTransport(new URL(command), { requestInit: { headers }, fetch: named });
    await Protocol.prototype.connect.call(client, t);
    t.setProtocolVersion(revision);
    meta = {
      'io.modelcontextprotocol/protocolVersion': revision,
      'io.modelcontextprotocol/clientInfo': clientInfo,
      'io.modelcontextprotocol/clientCapabilities': {},
    };
  } else {
    await client.connect(new StreamableHTTPClientTransport(new URL(command), { requestInit: { headers } }));
  }
} else {
  await client.connect(new StdioClientTransport({ command, args, env: process.env, stderr: 'ignore' }));
}

let n = 0;
const one = async () => {
  const i = n++;
  const t0 = process.hrtime.bigint();
  const args = toolName === 'ping' ? { n: i } : {};
  const r = await client.callTool({ name: toolName, arguments: args, ...(meta && { _meta: meta }) });
  if (r.isError || (toolName === 'ping' && !r.content[0].text.includes('pong ' + i))) throw new Error('bad result ' + JSON.stringify(r));
  return Number(process.hrtime.bigint() - t0) / 1e3;
};
const runFor = async (total) => {
  const lat = [];
  let left = total;
  const worker = async () => { while (left-- > 0) lat.push(await one()); };
  const t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: inflight }, worker));
  return { secs: Number(process.hrtime.bigint() - t0) / 1e9, lat: lat.sort((a, b) => a - b) };
};
await runFor(warmup);
const { secs, lat } = await runFor(calls);
const pct = (p) => lat[Math.min(lat.length - 1, Math.floor(lat.length * p))].toFixed(0);
console.log(JSON.stringify({ calls, inflight, perSecond: Math.round(calls / secs), p50us: Number(pct(0.5)), p99us: Number(pct(0.99)) }));
await client.close();

// Save → the new version answers, through `jean2 mcp` over stdio from one TypeScript SDK
// client (issue 23's Benchmarks point). The client first calls `ping` until it answers
// (warm), then SAVES times rewrites the tool's source with a new marker and calls until the
// answer carries it: the time from the write to that answer is one sample. Then it makes a
// new tool folder and calls it until it answers (first call of a new tool, FIRSTS times),
// and times WARM calls of the last version (warm calls).
// FIRST_VIA says how the client learns of the new tool: `poll` (default) calls it until it
// answers, as every figure before issue 23's first-call work was measured; `listed` does what
// an MCP client does: it waits for notifications/tools/list_changed, lists the tools again
// (the SDK's listChanged handler, without its default 300 ms debounce) and calls the new tool
// once it is listed. Polling keeps the server and the client busy with failing calls while
// the new tool's workers start, which on a small machine slows the start it waits for.
// TRACE_FILE, when set, gets the client's timestamps (ms since the epoch) of each first call.
// Usage: node reload.mjs TOOLSDIR COMMAND [ARGS...]   (env SAVES, FIRSTS, WARM, GAP_MS, FIRST_VIA, TRACE_FILE)
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { writeFileSync, mkdirSync, rmSync, appendFileSync } from 'node:fs';
import { join } from 'node:path';

const [toolsDir, command, ...args] = process.argv.slice(2);
const saves = Number(process.env.SAVES ?? 15);
const firsts = Number(process.env.FIRSTS ?? 5);
const warm = Number(process.env.WARM ?? 500);
const gapMs = Number(process.env.GAP_MS ?? 300); // pause between saves: an editor's saves are not back to back
const firstVia = process.env.FIRST_VIA ?? 'poll';
if (firstVia !== 'poll' && firstVia !== 'listed') throw new Error(`FIRST_VIA=${firstVia}: poll or listed`);
const traceFile = process.env.TRACE_FILE;
const trace = (label) => {
  if (traceFile) appendFileSync(traceFile, `${(performance.timeOrigin + performance.now()).toFixed(3)} client ${label}\n`);
};

const source = (name, marker) => `// Written by bench/mcp/reload.mjs.
export const definition = {
  name: '${name}',
  description: 'Answer pong.',
  inputSchema: { type: 'object', properties: { n: { type: 'number' } } },
};

export async function execute(input: { n?: number }) {
  return { success: true, result: '${marker} ' + (input.n ?? 0) };
}
`;

// Each list the client fetches after a list_changed notification wakes whoever waits for a
// name in it (FIRST_VIA=listed).
let listed = new Set();
let listWaiters = [];
const onToolsChanged = (err, tools) => {
  if (err || !tools) return;
  listed = new Set(tools.map((t) => t.name));
  trace(`listed ${tools.length} tools`);
  const ready = listWaiters.filter((w) => listed.has(w.name));
  listWaiters = listWaiters.filter((w) => !listed.has(w.name));
  for (const w of ready) w.resolve();
};
const whenListed = (name) => listed.has(name) ? Promise.resolve() : new Promise((resolve) => listWaiters.push({ name, resolve }));
const client = new Client({ name: 'reload-bench', version: '1.0.0' },
  { listChanged: { tools: { debounceMs: 0, onChanged: onToolsChanged } } });
await client.connect(new StdioClientTransport({ command, args, env: process.env, stderr: 'ignore' }));

const now = () => Number(process.hrtime.bigint()) / 1e6;
const text = (r) => (r.content?.[0]?.text ?? '');
// Calls name until its answer includes want; returns the time from t0 to that answer.
const until = async (name, want, t0) => {
  for (;;) {
    let r;
    try {
      r = await client.callTool({ name, arguments: { n: 1 } });
    } catch (e) {
      r = { isError: true, content: [{ text: String(e) }] };
    }
    if (!r.isError && text(r).includes(want)) return now() - t0;
    if (now() - t0 > 20000) throw new Error(`${name}: ${want} never answered; last: ${JSON.stringify(r)}`);
  }
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(s.length * p))]; };
const fmt = (xs) => ({ p50ms: +pct(xs, 0.5).toFixed(1), p95ms: +pct(xs, 0.95).toFixed(1), minms: +Math.min(...xs).toFixed(1), maxms: +Math.max(...xs).toFixed(1) });

await until('ping', 'pong', now());

const reload = [];
for (let i = 0; i < saves; i++) {
  await sleep(gapMs);
  const marker = `v${i}-${process.pid}`;
  const t0 = now();
  writeFileSync(join(toolsDir, 'ping', 'tool.ts'), source('ping', marker));
  reload.push(await until('ping', marker, t0));
}

const first = [];
for (let i = 0; i < firsts; i++) {
  await sleep(gapMs);
  const name = `fresh${i}_${process.pid}`;
  const dir = join(toolsDir, name);
  const appeared = firstVia === 'listed' ? whenListed(name) : null;
  const t0 = now();
  trace(`write ${name}`);
  mkdirSync(dir);
  writeFileSync(join(dir, 'tool.ts'), source(name, 'new'));
  if (appeared) await appeared;
  first.push(await until(name, 'new', t0));
  trace(`answered ${name}`);
  rmSync(dir, { recursive: true, force: true });
}

const warmLat = [];
for (let i = 0; i < warm; i++) {
  const t0 = now();
  await client.callTool({ name: 'ping', arguments: { n: i } });
  warmLat.push((now() - t0) * 1000);
}
const w = [...warmLat].sort((a, b) => a - b);
console.log(JSON.stringify({
  saves, reload: fmt(reload), samples: reload.map((x) => +x.toFixed(0)),
  firstCall: first.length ? { via: firstVia, ...fmt(first) } : null,
  warmCall: { p50us: +pct(w, 0.5).toFixed(0), p95us: +pct(w, 0.95).toFixed(0) },
}));
await client.close();

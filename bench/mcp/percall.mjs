// What one tools/call costs the server's processes, one call at a time over stdio: per call,
// the CPU time and the voluntary and involuntary context switches of every process under
// the server (jean2 and its worker), summed by process name, and the client's p50. On a
// shared machine calls/s swings with the neighbours' load; these move much less.
// Usage: node percall.mjs COMMAND [ARGS...]   (env CALLS=5000, WARMUP=500, TOOL=ping,
// PERTHREAD=1 to list each thread too)
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import fs from 'node:fs';

const [command, ...args] = process.argv.slice(2);
const calls = Number(process.env.CALLS ?? 5000);
const warmup = Number(process.env.WARMUP ?? 500);
const toolName = process.env.TOOL ?? 'ping';
const ticksPerSecond = 100; // USER_HZ on Linux

const client = new Client({ name: 'percall', version: '1.0.0' });
const transport = new StdioClientTransport({ command, args, env: process.env, stderr: 'ignore' });
await client.connect(transport);

// fields of /proc/PID/stat after the command name (which may hold spaces)
const statFields = (path) => {
  const s = fs.readFileSync(path, 'utf8');
  return { name: s.slice(s.indexOf('(') + 1, s.lastIndexOf(')')), f: s.slice(s.lastIndexOf(')') + 2).split(' ') };
};
const switches = (path) => {
  const st = fs.readFileSync(path, 'utf8');
  return { vol: Number(/\nvoluntary_ctxt_switches:\s+(\d+)/.exec(st)[1]), inv: Number(/nonvoluntary_ctxt_switches:\s+(\d+)/.exec(st)[1]) };
};

// tree lists root and the processes below it.
function tree(root) {
  const kids = new Map();
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const ppid = Number(statFields(`/proc/${d}/stat`).f[1]);
      if (!kids.has(ppid)) kids.set(ppid, []);
      kids.get(ppid).push(Number(d));
    } catch {} // ended meanwhile
  }
  const out = [];
  const todo = [root];
  while (todo.length) {
    const p = todo.pop();
    out.push(p);
    todo.push(...(kids.get(p) ?? []));
  }
  return out;
}

// snapshot: per process (and thread, with PERTHREAD) its CPU ticks and context switches.
function snapshot(root) {
  const r = {};
  for (const p of tree(root)) {
    try {
      const { name, f } = statFields(`/proc/${p}/stat`);
      const sum = { name, cpu: Number(f[11]) + Number(f[12]), vol: 0, inv: 0 };
      for (const t of fs.readdirSync(`/proc/${p}/task`)) {
        const sw = switches(`/proc/${p}/task/${t}/status`);
        sum.vol += sw.vol;
        sum.inv += sw.inv;
        if (process.env.PERTHREAD) {
          const tf = statFields(`/proc/${p}/task/${t}/stat`).f;
          r['t' + t] = { name: `${name}/${t}`, cpu: Number(tf[11]) + Number(tf[12]), ...sw };
        }
      }
      r[p] = sum;
    } catch {}
  }
  return r;
}

let n = 0;
const one = async () => {
  const i = n++;
  const t0 = process.hrtime.bigint();
  const r = await client.callTool({ name: toolName, arguments: toolName === 'ping' ? { n: i } : {} });
  if (r.isError || (toolName === 'ping' && !r.content[0].text.includes('pong ' + i))) throw new Error('bad result ' + JSON.stringify(r));
  return Number(process.hrtime.bigint() - t0) / 1e3;
};
for (let i = 0; i < warmup; i++) await one();
const before = snapshot(transport.pid);
const cpu0 = process.cpuUsage();
const lat = [];
const t0 = process.hrtime.bigint();
for (let i = 0; i < calls; i++) lat.push(await one());
const secs = Number(process.hrtime.bigint() - t0) / 1e9;
const after = snapshot(transport.pid);
const cpu = process.cpuUsage(cpu0);
lat.sort((a, b) => a - b);

const per = {};
for (const [k, y] of Object.entries(after)) {
  const x = before[k] ?? { cpu: 0, vol: 0, inv: 0 };
  const s = (per[y.name] ??= { cpuus: 0, vol: 0, inv: 0 });
  s.cpuus += ((y.cpu - x.cpu) * 1e6) / ticksPerSecond / calls;
  s.vol += (y.vol - x.vol) / calls;
  s.inv += (y.inv - x.inv) / calls;
}
for (const s of Object.values(per)) {
  s.cpuus = Math.round(s.cpuus);
  s.vol = +s.vol.toFixed(2);
  s.inv = +s.inv.toFixed(2);
}
console.log(JSON.stringify({
  perSecond: Math.round(calls / secs), p50us: Math.round(lat[calls >> 1]),
  clientCpuus: Math.round((cpu.user + cpu.system) / calls), ...per,
}));
await client.close();

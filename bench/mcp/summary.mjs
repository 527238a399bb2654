// Summarizes run.sh's results: for each server, the median and range of calls/s and p50
// over the rounds. Usage: node summary.mjs RESULTS  (lines "NAME {json from bench.mjs}")
import { readFileSync } from 'node:fs';

const runs = new Map();
for (const line of readFileSync(process.argv[2], 'utf8').split('\n')) {
  const at = line.indexOf(' ');
  if (at < 0) continue;
  const name = line.slice(0, at);
  const r = JSON.parse(line.slice(at).trim());
  if (!runs.has(name)) runs.set(name, []);
  runs.get(name).push(r);
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : Math.round((s[m - 1] + s[m]) / 2);
};
const span = (xs) => `${Math.min(...xs)}–${Math.max(...xs)}`;
for (const [name, rs] of runs) {
  const ps = rs.map((r) => r.perSecond);
  const p50 = rs.map((r) => r.p50us);
  const p99 = rs.map((r) => r.p99us);
  console.log(`${name.padEnd(10)} ${rs.length} runs  calls/s median ${median(ps)} (${span(ps)})  p50 µs median ${median(p50)} (${span(p50)})  p99 µs median ${median(p99)} (${span(p99)})`);
}

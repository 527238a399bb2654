// Line diffs for a turn's changed files: before/after text → the diff visualization's shape
// (REFERENCE §6: hunks of changes with old and new line numbers), so a turn's diff and a
// tool's diff are drawn by the same code.

const MAX_EDIT = 1000; // beyond this many edits the diff is shown as all removed + all added

/** splitLines splits text into lines without their newlines; "" has no lines. */
export function splitLines(text) {
  if (!text) return [];
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  return lines;
}

/** diffLines returns the edit script [{type, content, oldLineNumber?, newLineNumber?}] (Myers). */
export function diffLines(a, b) {
  // Common head and tail first: most edits touch a small part of a file.
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const middle = myers(a.slice(start, endA), b.slice(start, endB));
  const ops = [];
  for (let k = 0; k < start; k++) ops.push(["=", k, k]);
  for (const [t, i, j] of middle) ops.push([t, i + start, j + start]);
  for (let k = 0; k < a.length - endA; k++) ops.push(["=", endA + k, endB + k]);
  return ops.map(([t, i, j]) => {
    if (t === "=") return { type: "context", content: a[i], oldLineNumber: i + 1, newLineNumber: j + 1 };
    if (t === "-") return { type: "removed", content: a[i], oldLineNumber: i + 1 };
    return { type: "added", content: b[j], newLineNumber: j + 1 };
  });
}

function myers(a, b) {
  const n = a.length;
  const m = b.length;
  if (n === 0) return b.map((_, j) => ["+", 0, j]);
  if (m === 0) return a.map((_, i) => ["-", i, 0]);
  const max = Math.min(n + m, MAX_EDIT);
  const off = max + 1;
  const v = new Int32Array(2 * max + 3);
  const trace = [];
  let found = false;
  for (let d = 0; d <= max && !found; d++) {
    trace.push(v.slice(off - d - 1, off + d + 2)); // frontier after d-1 edits, k in [-d-1, d+1]
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[off + k - 1] < v[off + k + 1]) ? v[off + k + 1] : v[off + k - 1] + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[off + k] = x;
      if (x >= n && y >= m) {
        found = true;
        break;
      }
    }
  }
  if (!found) {
    // Too different to diff cheaply: everything old goes, everything new comes.
    return [...a.map((_, i) => ["-", i, 0]), ...b.map((_, j) => ["+", 0, j])];
  }
  // Walk back through the saved frontiers.
  const ops = [];
  let x = n;
  let y = m;
  for (let d = trace.length - 1; d > 0; d--) {
    const vd = trace[d];
    const at = (kk) => vd[kk + d + 1];
    const k = x - y;
    const prevK = k === -d || (k !== d && at(k - 1) < at(k + 1)) ? k + 1 : k - 1;
    const prevX = at(prevK);
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      ops.push(["=", x - 1, y - 1]);
      x--;
      y--;
    }
    if (x === prevX) ops.push(["+", x, y - 1]);
    else ops.push(["-", x - 1, y]);
    x = prevX;
    y = prevY;
  }
  while (x > 0 && y > 0) {
    ops.push(["=", x - 1, y - 1]);
    x--;
    y--;
  }
  return ops.reverse();
}

/** hunks groups an edit script into hunks with `context` unchanged lines around changes. */
export function hunks(changes, context = 3) {
  const out = [];
  let cur = null;
  let lastChange = -Infinity;
  changes.forEach((c, idx) => {
    if (c.type === "context") return;
    const from = Math.max(0, idx - context);
    if (cur && from <= lastChange + context + 1) {
      for (let k = lastChange + 1; k <= idx; k++) cur.changes.push(changes[k]);
    } else {
      if (cur) closeHunk(cur, changes, lastChange, context);
      cur = { changes: changes.slice(from, idx + 1) };
    }
    lastChange = idx;
  });
  if (cur) closeHunk(cur, changes, lastChange, context);
  return out;

  function closeHunk(hk, all, last, ctx) {
    for (let k = last + 1; k < Math.min(all.length, last + 1 + ctx); k++) hk.changes.push(all[k]);
    const olds = hk.changes.filter((c) => c.oldLineNumber !== undefined).map((c) => c.oldLineNumber);
    const news = hk.changes.filter((c) => c.newLineNumber !== undefined).map((c) => c.newLineNumber);
    out.push({
      oldStart: olds.length ? olds[0] : 0,
      oldLines: hk.changes.filter((c) => c.type !== "added").length,
      newStart: news.length ? news[0] : 0,
      newLines: hk.changes.filter((c) => c.type !== "removed").length,
      changes: hk.changes,
    });
  }
}

/** fileDiff makes a diff visualization from a file's text before and after. */
export function fileDiff(path, before, after) {
  const changes = diffLines(splitLines(before), splitLines(after));
  return {
    type: "diff",
    path,
    hunks: hunks(changes),
    additions: changes.filter((c) => c.type === "added").length,
    deletions: changes.filter((c) => c.type === "removed").length,
  };
}

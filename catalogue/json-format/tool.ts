// json-format: the JSON formatter a model reaches for instead of hand-editing braces.
// Everything it touches goes through ctx.fs, so the host asks for files outside the
// workspace and records the write-back on the turn's ledger (undo takes it back); the tool's
// own code needs no power of its own, which its permissions say.
import type { ToolDefinition, ToolContext, ToolResult, CodeVisualization } from '@jean2/sdk';

interface Input {
  path?: string;
  text?: string;
  indent?: number;
  sortKeys?: boolean;
  write?: boolean;
}

export const definition: ToolDefinition = {
  name: 'json-format',
  description:
    'Pretty-print, minify (indent 0) or check JSON, from a workspace file (path) or given text. ' +
    'sortKeys orders object keys; write puts the formatted JSON back into the file. ' +
    'Invalid JSON fails with the line and column of the problem.',
  inputSchema: {
    type: 'object',
    properties: {
      path: { type: 'string', description: 'A JSON file, relative to the workspace' },
      text: { type: 'string', description: 'JSON text, when there is no file' },
      indent: { type: 'integer', minimum: 0, maximum: 8, description: 'Spaces per level; 0 minifies (default 2)' },
      sortKeys: { type: 'boolean', description: 'Sort the keys of every object (default false)' },
      write: { type: 'boolean', description: 'Write the result back into path (default false)' },
    },
  },
  timeout: 10000,
  permissions: { read: [], write: [], childProcess: false, network: [] },
};

export async function execute(input: Input, ctx: ToolContext): Promise<ToolResult> {
  if ((input.path === undefined) === (input.text === undefined)) {
    return { success: false, error: 'give exactly one of path and text' };
  }
  if (input.write && input.path === undefined) {
    return { success: false, error: 'write needs a path' };
  }
  const source = input.path !== undefined ? await ctx.fs.readFile(input.path, 'utf-8') : input.text!;
  let value: unknown;
  try {
    value = JSON.parse(source);
  } catch (err) {
    const where = input.path ?? 'text';
    return { success: false, error: `${where} is not valid JSON: ${describe(err as Error, source)}` };
  }
  const indent = input.indent ?? 2;
  const formatted = JSON.stringify(input.sortKeys ? sortKeys(value) : value, null, indent) + (indent > 0 ? '\n' : '');
  const changed = formatted !== source;
  if (input.write && changed) {
    await ctx.fs.writeFile(input.path!, formatted);
  }
  const viz: CodeVisualization = {
    type: 'code',
    path: input.path !== undefined ? ctx.resolvePath(input.path) : 'json',
    content: formatted,
    language: 'json',
    created: false,
  };
  return {
    success: true,
    result: { valid: true, changed, written: Boolean(input.write && changed), bytes: formatted.length, formatted },
    visualization: viz,
  };
}

// sortKeys copies a value with every object's keys in code-point order, arrays untouched.
function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v === null || typeof v !== 'object') return v;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v as object).sort()) out[k] = sortKeys((v as Record<string, unknown>)[k]);
  return out;
}

// describe adds the line and column of the first offending character: the engines' own
// messages differ (V8 names a position for some errors only, Bun for none), so the place is
// found by a scan of our own.
function describe(err: Error, source: string): string {
  const pos = errorOffset(source);
  const before = source.slice(0, pos).split('\n');
  return `${err.message} (line ${before.length}, column ${before[before.length - 1].length + 1})`;
}

// errorOffset scans JSON and returns the offset where it stops being valid.
function errorOffset(s: string): number {
  let i = 0;
  const ws = () => { while (i < s.length && ' \t\n\r'.includes(s[i])) i++; };
  const fail = (): never => { throw i; };
  const lit = (word: string) => { if (s.startsWith(word, i)) i += word.length; else fail(); };
  const str = () => {
    i++;
    while (i < s.length && s[i] !== '"') {
      if (s[i] < ' ') fail();
      i += s[i] === '\\' ? 2 : 1;
    }
    if (i >= s.length) fail();
    i++;
  };
  const num = () => {
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(s.slice(i));
    if (!m) fail();
    i += m![0].length;
  };
  const list = (close: string, item: () => void) => {
    i++; ws();
    if (s[i] === close) { i++; return; }
    for (;;) {
      item(); ws();
      if (s[i] === close) { i++; return; }
      if (s[i] !== ',') fail();
      i++; ws();
    }
  };
  const value = (): void => {
    ws();
    const c = s[i];
    if (c === '{') list('}', () => { if (s[i] !== '"') fail(); str(); ws(); if (s[i] !== ':') fail(); i++; value(); });
    else if (c === '[') list(']', value);
    else if (c === '"') str();
    else if (c === 't') lit('true');
    else if (c === 'f') lit('false');
    else if (c === 'n') lit('null');
    else num();
  };
  try {
    value(); ws();
    return i < s.length ? i : s.length;
  } catch (at) {
    return at as number;
  }
}

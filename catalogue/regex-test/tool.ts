// regex-test: lets a model check a regular expression before it uses one in an edit or a
// grep, on sample text or on a workspace file read through ctx.fs. Matches are capped, and
// the call's timeout bounds a pattern that backtracks without end.
import type { ToolDefinition, ToolContext, ToolResult } from '@jean2/sdk';

interface Input {
  pattern: string;
  flags?: string;
  text?: string;
  path?: string;
  replace?: string;
  limit?: number;
}

interface Match {
  match: string;
  index: number;
  line: number;
  column: number;
  groups: (string | null)[];
  named?: Record<string, string | null>;
}

export const definition: ToolDefinition = {
  name: 'regex-test',
  description:
    'Run a JavaScript regular expression over text or a workspace file (path): every match (up to limit, default 50) ' +
    'with its line, column, numbered and named groups. With replace, also the text after replacing every match ' +
    '($1, $<name> and $& work as in String.replace).',
  inputSchema: {
    type: 'object',
    properties: {
      pattern: { type: 'string', description: 'The regular expression, without slashes' },
      flags: { type: 'string', pattern: '^[imsuvy]*$', description: 'Flags besides g (which is always on): i, m, s, u, v, y' },
      text: { type: 'string', description: 'The text to search' },
      path: { type: 'string', description: 'Or a file, relative to the workspace' },
      replace: { type: 'string', description: 'A replacement to apply to every match' },
      limit: { type: 'integer', minimum: 1, maximum: 1000, description: 'The most matches to list (default 50)' },
    },
    required: ['pattern'],
  },
  timeout: 10000,
  annotations: { readOnlyHint: true },
  permissions: { read: [], write: [], childProcess: false, network: [] },
};

export async function execute(input: Input, ctx: ToolContext): Promise<ToolResult> {
  if ((input.path === undefined) === (input.text === undefined)) {
    return { success: false, error: 'give exactly one of text and path' };
  }
  let re: RegExp;
  try {
    re = new RegExp(input.pattern, 'g' + (input.flags ?? ''));
  } catch (err) {
    return { success: false, error: `the pattern does not compile: ${(err as Error).message}` };
  }
  const text = input.path !== undefined ? await ctx.fs.readFile(input.path, 'utf-8') : input.text!;
  const limit = input.limit ?? 50;
  const lineStarts = startsOfLines(text);
  const matches: Match[] = [];
  let total = 0;
  for (const m of text.matchAll(re)) {
    total++;
    if (matches.length < limit) matches.push(describe(m, lineStarts));
  }
  const result: Record<string, unknown> = { count: total, truncated: total > matches.length, matches };
  if (input.replace !== undefined) result.replaced = text.replace(re, input.replace);
  return { success: true, result };
}

function describe(m: RegExpMatchArray, lineStarts: number[]): Match {
  const index = m.index ?? 0;
  let line = 0;
  while (line + 1 < lineStarts.length && lineStarts[line + 1] <= index) line++;
  const out: Match = {
    match: m[0],
    index,
    line: line + 1,
    column: index - lineStarts[line] + 1,
    groups: m.slice(1).map((g) => g ?? null),
  };
  if (m.groups) out.named = Object.fromEntries(Object.entries(m.groups).map(([k, v]) => [k, v ?? null]));
  return out;
}

function startsOfLines(text: string): number[] {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text[i] === '\n') starts.push(i + 1);
  return starts;
}

// text-stats: the counts `wc` gives, plus what a writer asks next (longest line, the words
// used most, reading time), without a shell: the file is read through ctx.fs, so the host
// decides what may be read and asks for anything outside the workspace.
import type { ToolDefinition, ToolContext, ToolResult } from '@jean2/sdk';

interface Input {
  path: string;
  top?: number;
}

export const definition: ToolDefinition = {
  name: 'text-stats',
  description:
    'Count the lines, words, characters and bytes of a text file in the workspace, with its longest line, ' +
    'the words it uses most (top, default 10) and an estimated reading time.',
  inputSchema: {
    type: 'object',
    properties: {
      path: { type: 'string', description: 'The file, relative to the workspace' },
      top: { type: 'integer', minimum: 0, maximum: 100, description: 'How many frequent words to list (default 10)' },
    },
    required: ['path'],
  },
  timeout: 15000,
  annotations: { readOnlyHint: true },
  permissions: { read: [], write: [], childProcess: false, network: [] },
};

// wordsPerMinute is a common silent-reading speed for prose.
const wordsPerMinute = 230;

export async function execute(input: Input, ctx: ToolContext): Promise<ToolResult> {
  const bytes = await ctx.fs.readFile(input.path);
  if (bytes.includes(0)) {
    return { success: false, error: `${input.path} is a binary file (it holds NUL bytes)` };
  }
  const text = new TextDecoder().decode(bytes);
  const lines = text === '' ? [] : text.replace(/\r?\n$/, '').split(/\r?\n/);
  const words = text.match(/[\p{L}\p{N}]+(?:['’-][\p{L}\p{N}]+)*/gu) ?? [];
  let longest = { line: 0, length: 0 };
  lines.forEach((l, i) => {
    const length = [...l].length;
    if (length > longest.length) longest = { line: i + 1, length };
  });
  const result = {
    path: input.path,
    lines: lines.length,
    words: words.length,
    characters: [...text].length,
    bytes: bytes.length,
    longestLine: longest,
    topWords: topWords(words, input.top ?? 10),
    readingMinutes: Math.ceil(words.length / wordsPerMinute),
  };
  return { success: true, result };
}

// topWords counts words case-folded and lists the most frequent, ties in first-seen order.
function topWords(words: string[], n: number): { word: string; count: number }[] {
  const counts = new Map<string, number>();
  for (const w of words) {
    const k = w.toLowerCase();
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([word, count]) => ({ word, count }));
}

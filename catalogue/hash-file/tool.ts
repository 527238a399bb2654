// hash-file: checks a download against its published digest, or fingerprints a file,
// without a shell. The bytes come through ctx.fs (so reading outside the workspace is the
// person's call) and are hashed with Web Crypto, which Node and Bun workers both have (and
// whose types every editor knows, unlike node:crypto's).
import type { ToolDefinition, ToolContext, ToolResult } from '@jean2/sdk';

type Algorithm = 'sha256' | 'sha1' | 'sha384' | 'sha512';

const webName: Record<Algorithm, string> = { sha256: 'SHA-256', sha1: 'SHA-1', sha384: 'SHA-384', sha512: 'SHA-512' };

interface Input {
  path: string;
  algorithm?: Algorithm;
  expected?: string;
}

export const definition: ToolDefinition = {
  name: 'hash-file',
  description:
    'The digest of a file in the workspace: sha256 (default), sha1, sha384 or sha512, in hex. ' +
    'With expected (hex, or a line of a sha256sum-style file), also whether the file matches it.',
  inputSchema: {
    type: 'object',
    properties: {
      path: { type: 'string', description: 'The file, relative to the workspace' },
      algorithm: { type: 'string', enum: ['sha256', 'sha1', 'sha384', 'sha512'] },
      expected: { type: 'string', description: 'The digest the file should have' },
    },
    required: ['path'],
  },
  timeout: 60000,
  annotations: { readOnlyHint: true },
  permissions: { read: [], write: [], childProcess: false, network: [] },
};

export async function execute(input: Input, ctx: ToolContext): Promise<ToolResult> {
  const algorithm = input.algorithm ?? 'sha256';
  const bytes = await ctx.fs.readFile(input.path);
  // The host hands a plain ArrayBuffer-backed Uint8Array; TypeScript's type allows a shared
  // buffer, which digest() does not take, hence the narrowing.
  const sum = new Uint8Array(await crypto.subtle.digest(webName[algorithm], bytes as Uint8Array<ArrayBuffer>));
  const digest = Array.from(sum, (b) => b.toString(16).padStart(2, '0')).join('');
  const result: Record<string, unknown> = { path: input.path, algorithm, digest, bytes: bytes.length };
  if (input.expected !== undefined) {
    // "<hex>  name" as sha256sum writes it: the first field is the digest.
    const want = input.expected.trim().split(/\s+/)[0].toLowerCase();
    result.matches = want === digest;
  }
  return { success: true, result };
}

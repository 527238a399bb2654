// url-codec: percent-encoding by hand is where models slip (a "+" that meant a space, a
// double-encoded "%25"); this does it with the platform's URL functions. It computes only:
// no files, no network, and its permissions say so.
import type { ToolDefinition, ToolContext, ToolResult } from '@jean2/sdk';

interface Input {
  action: 'encode' | 'decode' | 'parse';
  text: string;
  form?: boolean;
}

export const definition: ToolDefinition = {
  name: 'url-codec',
  description:
    'encode: percent-encode text for a URL component (form: true writes spaces as "+", as HTML forms do). ' +
    'decode: undo percent-encoding (form: true also reads "+" as a space). ' +
    'parse: take a URL apart into scheme, user, host, port, path, query parameters (decoded, in order) and fragment.',
  inputSchema: {
    type: 'object',
    properties: {
      action: { type: 'string', enum: ['encode', 'decode', 'parse'] },
      text: { type: 'string', description: 'The text or URL' },
      form: { type: 'boolean', description: 'application/x-www-form-urlencoded rules (default false)' },
    },
    required: ['action', 'text'],
  },
  timeout: 5000,
  annotations: { readOnlyHint: true },
  permissions: { read: [], write: [], childProcess: false, network: [] },
};

export async function execute(input: Input, _ctx: ToolContext): Promise<ToolResult> {
  switch (input.action) {
    case 'encode':
      return { success: true, result: { text: encode(input.text, input.form ?? false) } };
    case 'decode':
      try {
        const text = input.form ? input.text.replace(/\+/g, ' ') : input.text;
        return { success: true, result: { text: decodeURIComponent(text) } };
      } catch {
        return { success: false, error: `cannot decode ${JSON.stringify(input.text)}: a "%" is not followed by two hex digits of valid UTF-8` };
      }
    case 'parse':
      return parse(input.text);
  }
}

function encode(text: string, form: boolean): string {
  const out = encodeURIComponent(text);
  return form ? out.replace(/%20/g, '+') : out;
}

function parse(text: string): ToolResult {
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    return { success: false, error: `${JSON.stringify(text)} is not an absolute URL (it needs a scheme, such as https://)` };
  }
  return {
    success: true,
    result: {
      scheme: u.protocol.replace(/:$/, ''),
      username: decodeURIComponent(u.username),
      host: u.hostname,
      port: u.port === '' ? null : Number(u.port),
      path: decodeURIComponent(u.pathname),
      query: [...u.searchParams.entries()].map(([name, value]) => ({ name, value })),
      fragment: decodeURIComponent(u.hash.replace(/^#/, '')),
      origin: u.origin,
    },
  };
}

// rich-content returns content beyond JSON, as a tool author would: an image, audio, an
// embedded resource, a resource link, or all of them mixed with text. It is the example of
// docs/writing-tools.md#rich-results, and the host's and MCP server's tests call it (with
// the broken modes, which the host must refuse).
import type { ToolContent, ToolDefinition, ToolResult } from '@jean2/sdk';

// A 1×1 red PNG.
export const RED_PIXEL_PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC';

// A WAV header with no samples: enough for a client to see audio/wav.
const SILENT_WAV = Buffer.concat([
  Buffer.from('RIFF'), Buffer.from([36, 0, 0, 0]), Buffer.from('WAVEfmt '),
  Buffer.from([16, 0, 0, 0, 1, 0, 1, 0, 0x40, 0x1f, 0, 0, 0x80, 0x3e, 0, 0, 2, 0, 16, 0]),
  Buffer.from('data'), Buffer.from([0, 0, 0, 0]),
]).toString('base64');

export const definition: ToolDefinition = {
  name: 'rich-content',
  description: 'Return an image, audio, an embedded resource, a resource link, or all mixed with text.',
  inputSchema: {
    type: 'object',
    properties: {
      kind: {
        type: 'string',
        enum: ['image', 'audio', 'resource', 'link', 'mixed', 'with-result', 'bad-base64', 'wrong-type', 'big', 'huge'],
      },
    },
    required: ['kind'],
  },
};

const image: ToolContent = { type: 'image', data: RED_PIXEL_PNG, mimeType: 'image/png' };
const audio: ToolContent = { type: 'audio', data: SILENT_WAV, mimeType: 'audio/wav' };
const resource: ToolContent = {
  type: 'resource',
  resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' },
};
const link: ToolContent = { type: 'resource_link', uri: 'test://linked', name: 'linked', mimeType: 'text/plain' };

// pngOf is n bytes that start as a PNG does: what the host checks of an image.
function pngOf(n: number): string {
  const b = Buffer.alloc(n, 7);
  Buffer.from(RED_PIXEL_PNG, 'base64').copy(b);
  return b.toString('base64');
}

export async function execute(input: { kind: string }): Promise<ToolResult> {
  switch (input.kind) {
    case 'image': return { success: true, content: [image] };
    case 'audio': return { success: true, content: [audio] };
    case 'resource': return { success: true, content: [resource] };
    case 'link': return { success: true, content: [link] };
    case 'mixed':
      return { success: true, content: [{ type: 'text', text: 'Multiple content types test:' }, image, resource] };
    case 'with-result': return { success: true, result: { width: 1, height: 1 }, content: [image] };
    case 'bad-base64': return { success: true, content: [{ type: 'image', data: 'not base64!', mimeType: 'image/png' }] };
    case 'wrong-type': return { success: true, content: [{ type: 'image', data: SILENT_WAV, mimeType: 'image/png' }] };
    case 'big': return { success: true, content: [{ type: 'image', data: pngOf(5 << 20), mimeType: 'image/png' }] };
    case 'huge': return { success: true, content: [{ type: 'image', data: pngOf(17 << 20), mimeType: 'image/png' }] };
  }
  return { success: false, error: `unknown kind ${input.kind}` };
}

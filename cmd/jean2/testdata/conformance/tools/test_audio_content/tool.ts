// The suite's tools-call-audio scenario: a WAV header with no samples.
const SILENT_WAV = Buffer.concat([
  Buffer.from('RIFF'), Buffer.from([36, 0, 0, 0]), Buffer.from('WAVEfmt '),
  Buffer.from([16, 0, 0, 0, 1, 0, 1, 0, 0x40, 0x1f, 0, 0, 0x80, 0x3e, 0, 0, 2, 0, 16, 0]),
  Buffer.from('data'), Buffer.from([0, 0, 0, 0]),
]).toString('base64');

export const definition = {
  name: 'test_audio_content',
  description: 'Return audio.',
  inputSchema: { type: 'object', properties: {} },
};

export async function execute() {
  return { success: true, content: [{ type: 'audio', data: SILENT_WAV, mimeType: 'audio/wav' }] };
}

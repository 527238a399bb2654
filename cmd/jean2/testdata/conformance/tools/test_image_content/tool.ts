// The suite's tools-call-image scenario: one image, as a jean2 tool returns content.
const RED_PIXEL_PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC';

export const definition = {
  name: 'test_image_content',
  description: 'Return an image.',
  inputSchema: { type: 'object', properties: {} },
};

export async function execute() {
  return { success: true, content: [{ type: 'image', data: RED_PIXEL_PNG, mimeType: 'image/png' }] };
}

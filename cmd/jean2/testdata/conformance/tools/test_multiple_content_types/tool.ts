// The suite's tools-call-mixed-content scenario: text, an image and a resource together.
const RED_PIXEL_PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC';

export const definition = {
  name: 'test_multiple_content_types',
  description: 'Return text, an image and a resource.',
  inputSchema: { type: 'object', properties: {} },
};

export async function execute() {
  return {
    success: true,
    content: [
      { type: 'text', text: 'Multiple content types test:' },
      { type: 'image', data: RED_PIXEL_PNG, mimeType: 'image/png' },
      { type: 'resource', resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: '{"test":"data","value":123}' } },
    ],
  };
}

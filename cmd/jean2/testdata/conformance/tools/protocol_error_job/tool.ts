// May run as a task, and throws. jean2 makes a tool's exception a tool error like any other
// (the model reads it), not a protocol error, so the task completes with isError.
export const definition = {
  name: 'protocol_error_job',
  description: 'Throw.',
  inputSchema: { type: 'object', properties: {} },
  execution: { taskSupport: 'optional' },
};

export async function execute(): Promise<never> {
  throw new Error('protocol_error_job always throws');
}

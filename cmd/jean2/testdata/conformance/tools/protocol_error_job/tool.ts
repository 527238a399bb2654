// May run as a task, and fails as a protocol error (@jean2/sdk's ProtocolError): the
// client gets a JSON-RPC error, and a task of the tasks extension ends failed with it.
// Anything else a tool throws is a tool error (isError), which the model reads.
import { ProtocolError } from '@jean2/sdk';

export const definition = {
  name: 'protocol_error_job',
  description: 'Fail as a protocol error.',
  inputSchema: { type: 'object', properties: {} },
  execution: { taskSupport: 'optional' },
};

export async function execute(): Promise<never> {
  throw new ProtocolError(-32603, 'protocol_error_job always fails as a protocol error');
}

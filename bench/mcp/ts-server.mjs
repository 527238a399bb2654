// The same trivial tool served by the official TypeScript SDK's own server.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const server = new McpServer({ name: 'ts-ping', version: '1.0.0' });
server.registerTool('ping', { description: 'Answer pong.', inputSchema: { n: z.number().optional() } },
  async ({ n }) => ({ content: [{ type: 'text', text: 'pong ' + (n ?? 0) }] }));
await server.connect(new StdioServerTransport());

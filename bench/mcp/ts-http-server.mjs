// The same trivial tool served by the official TypeScript SDK's streamable HTTP server, on
// Node's http. Prints "listening PORT" once it is.
//   default: one McpServer and transport per session (the SDK's own example);
//   STATELESS=1: stateless mode, a new McpServer and transport per request with no session
//   id (the SDK's stateless example), answering JSON rather than SSE (JSON=0 for SSE).
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

const stateless = process.env.STATELESS === '1';
const json = process.env.JSON !== '0';
const transports = new Map();
const newServer = () => {
  const server = new McpServer({ name: 'ts-ping', version: '1.0.0' });
  server.registerTool('ping', { description: 'Answer pong.', inputSchema: { n: z.number().optional() } },
    async ({ n }) => ({ content: [{ type: 'text', text: 'pong ' + (n ?? 0) }] }));
  return server;
};
const readBody = (req) => new Promise((res, rej) => {
  const parts = [];
  req.on('data', (c) => parts.push(c));
  req.on('end', () => res(parts.length ? JSON.parse(Buffer.concat(parts).toString()) : undefined));
  req.on('error', rej);
});
const serveStateless = async (req, res, body) => {
  const server = newServer();
  const t = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: json });
  res.on('close', () => { t.close(); server.close(); });
  await server.connect(t);
  await t.handleRequest(req, res, body);
};
const http = createServer(async (req, res) => {
  const body = req.method === 'POST' ? await readBody(req) : undefined;
  if (stateless) {
    if (req.method !== 'POST') {
      res.writeHead(405).end();
      return;
    }
    await serveStateless(req, res, body);
    return;
  }
  const id = req.headers['mcp-session-id'];
  let t = id && transports.get(id);
  if (!t && req.method === 'POST' && isInitializeRequest(body)) {
    t = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (sid) => transports.set(sid, t) });
    t.onclose = () => transports.delete(t.sessionId);
    await newServer().connect(t);
  }
  if (!t) {
    res.writeHead(400).end('no session');
    return;
  }
  await t.handleRequest(req, res, body);
});
http.listen(0, '127.0.0.1', () => console.log('listening ' + http.address().port));

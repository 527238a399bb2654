// A team's catalog of shared commands: an MCP server (streamable HTTP at /mcp) whose tools
// and prompts are the commands published to it, and a small API to publish one
// (POST /publish {kind: "tool" | "prompt", name, text}). jean2 imports it through
// $JEAN2_HOME/mcp.json, so what is published reaches jean2's clients; the jean2 tools
// test_trigger_tool_change and test_trigger_prompt_change publish to it. It listens on a
// free port of localhost and prints that port.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

const published = []; // {kind, name, text}, in order
const sessions = new Map(); // session id → {server, transport}

function offer(server, item) {
  const answer = [{ type: 'text', text: item.text }];
  if (item.kind === 'tool') {
    server.registerTool(item.name, { description: `Published: ${item.text}` }, async () => ({ content: answer }));
  } else {
    server.registerPrompt(item.name, { description: `Published: ${item.text}` }, () => ({
      messages: [{ role: 'user', content: answer[0] }],
    }));
  }
}

// Each session's server offers what was published; registering while connected sends
// notifications/tools/list_changed or prompts/list_changed to that session.
function newServer() {
  const server = new McpServer({ name: 'catalog', version: '1.0.0' });
  server.registerTool('list_published', { description: 'List what was published.' }, async () => ({
    content: [{ type: 'text', text: published.map((p) => `${p.kind} ${p.name}`).join('\n') || 'nothing yet' }],
  }));
  server.registerPrompt('catalog_overview', { description: 'What the catalog holds.' }, () => ({
    messages: [{ role: 'user', content: { type: 'text', text: `The catalog holds ${published.length} commands.` } }],
  }));
  for (const item of published) offer(server, item);
  return server;
}

async function readJSON(req) {
  let body = '';
  for await (const chunk of req) body += chunk;
  return body ? JSON.parse(body) : undefined;
}

async function serveMCP(req, res) {
  const id = req.headers['mcp-session-id'];
  const body = req.method === 'POST' ? await readJSON(req) : undefined;
  let entry = id ? sessions.get(id) : undefined;
  if (!entry) {
    if (id || req.method !== 'POST') {
      res.writeHead(404).end();
      return;
    }
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      onsessioninitialized: (sid) => sessions.set(sid, entry),
    });
    transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
    entry = { server: newServer(), transport };
    await entry.server.connect(transport);
  }
  await entry.transport.handleRequest(req, res, body);
}

async function publish(req, res) {
  const { kind, name, text } = (await readJSON(req)) ?? {};
  if (!['tool', 'prompt'].includes(kind) || !/^[A-Za-z0-9_-]{1,64}$/.test(name ?? '') || published.some((p) => p.name === name)) {
    res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'give a kind (tool or prompt) and a new name' }));
    return;
  }
  const item = { kind, name, text: String(text ?? name) };
  published.push(item);
  for (const { server } of sessions.values()) offer(server, item);
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ published: name }));
}

const httpServer = http.createServer((req, res) => {
  const path = new URL(req.url, 'http://localhost').pathname;
  const handle = path === '/mcp' ? serveMCP : path === '/publish' && req.method === 'POST' ? publish : null;
  if (!handle) {
    res.writeHead(404).end();
    return;
  }
  handle(req, res).catch((e) => {
    if (!res.headersSent) res.writeHead(500).end(String(e));
  });
});
httpServer.listen(0, '127.0.0.1', () => console.log(httpServer.address().port));

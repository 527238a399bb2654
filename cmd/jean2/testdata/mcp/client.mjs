// The official TypeScript SDK as a client of `jean2 mcp`. Usage:
//   node client.mjs SCENARIO JEAN2_BIN WORKSPACE TOOLS_DIR
// It prints one JSON object with what it saw. With MCP_URL (and MCP_TOKEN) set, it talks to
// that streamable HTTP endpoint (jean2 serve's /mcp) instead of starting JEAN2_BIN.
import fs from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema, CreateTaskResultSchema, CreateMessageRequestSchema, ElicitRequestSchema,
  LoggingMessageNotificationSchema, ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

const [scenario, bin, ws, toolsDir] = process.argv.slice(2);
const out = { scenario };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const withTimeout = (p, ms, what) => {
  let timer;
  const late = new Promise((_, rej) => { timer = setTimeout(() => rej(new Error('timed out waiting for ' + what)), ms); });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
};

const client = new Client({ name: 'ts-sdk-test', version: '1.0.0' }, { capabilities: { elicitation: { form: {} }, sampling: {} } });
out.elicitations = [];
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  const { message, requestedSchema } = req.params;
  out.elicitations.push({ message, mode: req.params.mode, schema: requestedSchema });
  if (requestedSchema.properties.allow) return { action: 'accept', content: { allow: true, remember: 'once' } };
  if (message.includes('Your name?')) return { action: 'accept', content: { answer: 'Ada' } };
  if (message.includes('Which environment?')) {
    // As a form would: the person picks the choice titled Staging; its const is the answer.
    const choice = requestedSchema.properties.answer.oneOf.find((c) => c.title === 'Staging');
    return { action: 'accept', content: { answer: choice.const } };
  }
  return { action: 'decline' };
});
client.setRequestHandler(CreateMessageRequestSchema, async (req) => ({
  role: 'assistant', model: 'ts-model', content: { type: 'text', text: 'sampled: ' + req.params.messages[0].content.text },
}));
out.logs = [];
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => { out.logs.push(n.params); });
let listChanged = () => {};
client.setNotificationHandler(ToolListChangedNotificationSchema, () => listChanged());
const nextListChange = () => new Promise((res) => { listChanged = res; });

const transport = process.env.MCP_URL
  ? new StreamableHTTPClientTransport(new URL(process.env.MCP_URL), { requestInit: { headers: { Authorization: 'Bearer ' + process.env.MCP_TOKEN } } })
  : new StdioClientTransport({ command: bin, args: ['mcp', '--workspace', ws], env: process.env, stderr: 'pipe' });
let stderr = '';
transport.stderr?.on('data', (d) => { stderr += d; });
await client.connect(transport);

try {
  if (scenario === 'serve') {
    out.tools = (await client.listTools()).tools;
    out.echo = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
    out.ask = await client.callTool({ name: 'ask', arguments: {} });

    // Progress, logs, then cancellation of the call.
    await client.setLoggingLevel('info');
    out.progress = [];
    const ac = new AbortController();
    const call = client.callTool({ name: 'wait', arguments: {} }, CallToolResultSchema, {
      signal: ac.signal,
      onprogress: (p) => { out.progress.push(p); if (out.progress.length === 3) ac.abort(new Error('stop pressed')); },
    });
    out.cancelled = await withTimeout(call.then((r) => ({ resolved: r }), (e) => ({ rejected: String(e?.message ?? e) })), 20000, 'the cancelled call');
    for (let i = 0; i < 50; i++) {
      await sleep(200);
      out.report = await client.callTool({ name: 'wait', arguments: { report: true } });
      if (out.report.structuredContent?.lastAbort || !out.report.content[0].text.includes('"lastAbort":null')) break;
    }

    out.think = await client.callTool({ name: 'think', arguments: { q: '2+2?' } });

    // A new tool folder: jean2 watches its tools and says the list changed.
    const changed = nextListChange();
    fs.mkdirSync(path.join(toolsDir, 'added'), { recursive: true });
    fs.writeFileSync(path.join(toolsDir, 'added', 'tool.ts'),
      "export const definition = { name: 'added', description: 'Added while serving.', inputSchema: { type: 'object' } };\n" +
      "export async function execute() { return { success: true, result: 'new' }; }\n");
    await withTimeout(changed, 20000, 'tools/list_changed');
    out.afterChange = (await client.listTools()).tools.map((t) => t.name).sort();
    out.added = await client.callTool({ name: 'added', arguments: {} });
  } else if (scenario === 'imported') {
    out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
    out.add = await client.callTool({ name: 'mcp__ts__add', arguments: { a: 2, b: 3 } });
    const changed = nextListChange();
    out.grow = await client.callTool({ name: 'mcp__ts__grow', arguments: {} });
    await withTimeout(changed, 20000, 'tools/list_changed after grow');
    out.afterGrow = (await client.listTools()).tools.map((t) => t.name).sort();
    out.grown = await client.callTool({ name: 'mcp__ts__grown', arguments: {} });
  } else if (scenario === 'tasks') {
    // Tasks (2025-11-25) through the SDK's experimental client: the SDK asks for a task
    // by itself for tools listed with execution.taskSupport, and follows it to its result.
    out.capabilities = client.getServerCapabilities();
    out.tools = (await client.listTools()).tools.map((t) => ({ name: t.name, execution: t.execution }));
    const follow = async (params) => {
      const seen = [];
      for await (const m of client.experimental.tasks.callToolStream(params, CallToolResultSchema, { task: { ttl: 60000 } })) {
        seen.push(m.type === 'taskCreated' || m.type === 'taskStatus' ? { type: m.type, status: m.task.status, ttl: m.task.ttl }
          : m.type === 'result' ? { type: m.type, result: m.result } : { type: m.type, error: String(m.error?.message ?? m.error) });
      }
      return seen;
    };
    out.echo = await follow({ name: 'echo', arguments: { text: 'hi' } });
    // Asks during a task: the status is input_required while the client answers.
    out.ask = await follow({ name: 'ask', arguments: {} });

    // A long call as a task, cancelled: the tool's signal aborts.
    const created = await client.request({ method: 'tools/call', params: { name: 'wait', arguments: {}, task: {} } }, CreateTaskResultSchema);
    const id = created.task.taskId;
    for (let i = 0; i < 100; i++) {
      out.running = await client.experimental.tasks.getTask(id);
      if (out.running.statusMessage === 'step 3') break;
      await sleep(100);
    }
    out.listed = (await client.experimental.tasks.listTasks()).tasks.map((t) => t.status);
    out.cancel = await client.experimental.tasks.cancelTask(id);
    out.afterCancel = await client.experimental.tasks.getTask(id);
    for (let i = 0; i < 50; i++) {
      await sleep(200);
      out.report = await client.callTool({ name: 'wait', arguments: { report: true } });
      if (!out.report.content[0].text.includes('"lastAbort":null')) break;
    }
    try {
      await client.experimental.tasks.getTask('no-such-task');
      out.unknown = 'answered';
    } catch (e) {
      out.unknown = String(e?.message ?? e);
    }
  } else {
    throw new Error('unknown scenario ' + scenario);
  }
} catch (e) {
  out.error = String(e?.stack ?? e);
}
await client.close();
out.stderr = stderr;
console.log(JSON.stringify(out));

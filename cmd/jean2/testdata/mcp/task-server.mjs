// An MCP server built with the official TypeScript SDK whose tools run only as tasks
// (execution.taskSupport "required", the SDK's experimental tasks), for jean2 to import.
// Over stdio, or with PORT_FILE set over streamable HTTP on a free port written there.
import fs from 'node:fs';
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js';
import { z } from 'zod';

const taskStore = new InMemoryTaskStore();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function makeServer() {
const server = new McpServer({ name: 'ts-tasks', version: '1.0.0' }, {
  capabilities: { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
  taskStore,
});

server.experimental.tasks.registerToolTask('delay', {
  description: 'Wait ms milliseconds as a task, then say so.',
  inputSchema: { ms: z.number() },
}, {
  async createTask({ ms }, { taskStore, taskRequestedTtl }) {
    const task = await taskStore.createTask({ ttl: taskRequestedTtl, pollInterval: 50 });
    (async () => {
      await sleep(ms);
      await taskStore.storeTaskResult(task.taskId, 'completed', {
        content: [{ type: 'text', text: `waited ${ms} ms as task ${task.taskId.length > 0 ? 'yes' : 'no'}` }],
      });
    })();
    return { task };
  },
  async getTask(_args, { taskId, taskStore }) { return await taskStore.getTask(taskId); },
  async getTaskResult(_args, { taskId, taskStore }) { return await taskStore.getTaskResult(taskId); },
});

// Runs until its task is cancelled, then writes the task's id to $MARKER.
server.experimental.tasks.registerToolTask('hang', {
  description: 'Run until the task is cancelled.',
  inputSchema: { note: z.string().optional() },
}, {
  async createTask(_args, { taskStore, taskRequestedTtl }) {
    const task = await taskStore.createTask({ ttl: taskRequestedTtl, pollInterval: 50 });
    (async () => {
      for (;;) {
        await sleep(50);
        const t = await taskStore.getTask(task.taskId);
        if (!t || t.status === 'cancelled') {
          fs.writeFileSync(process.env.MARKER, 'cancelled ' + task.taskId);
          return;
        }
      }
    })();
    return { task };
  },
  async getTask(_args, { taskId, taskStore }) { return await taskStore.getTask(taskId); },
  async getTaskResult(_args, { taskId, taskStore }) { return await taskStore.getTaskResult(taskId); },
});

server.registerTool('plain', { description: 'Answer on the request.' }, async () => ({ content: [{ type: 'text', text: 'plain answer' }] }));

return server;
}

if (process.env.PORT_FILE) {
  const sessions = {};
  const httpServer = http.createServer(async (req, res) => {
    let t = sessions[req.headers['mcp-session-id']];
    if (!t) {
      t = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (id) => { sessions[id] = t; } });
      await makeServer().connect(t);
    }
    await t.handleRequest(req, res);
  });
  httpServer.listen(0, '127.0.0.1', () => fs.writeFileSync(process.env.PORT_FILE, String(httpServer.address().port)));
} else {
  await makeServer().connect(new StdioServerTransport());
}

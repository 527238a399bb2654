// A tool in the style of jean2's catalogue todowrite/todoread: it keeps its list in SQLite
// (bun:sqlite) at ~/.jean2/data/todos.db, found through os.homedir(), and declares nothing.
import type { ToolDefinition, ToolContext, ToolResult, TodoListVisualization } from '@jean2/sdk';
import { Database } from 'bun:sqlite';
import { mkdirSync } from 'fs';
import { dirname, join } from 'path';
import { homedir } from 'os';
import { randomUUID } from 'crypto';

export const definition: ToolDefinition = {
  name: 'catalogue-todos',
  description: 'Writes or reads the session todo list kept in ~/.jean2/data/todos.db.',
  inputSchema: {
    type: 'object',
    properties: { todos: { type: 'array', items: { type: 'object' } } },
  },
};

type Todo = { content: string; status: 'pending' | 'in_progress' | 'completed' | 'cancelled'; priority: 'high' | 'medium' | 'low' };

export async function execute(input: { todos?: Todo[] }, ctx: ToolContext): Promise<ToolResult> {
  try {
    const dbPath = ctx.env.get('TODOS_DB_PATH') || join(homedir(), '.jean2', 'data', 'todos.db');
    mkdirSync(dirname(dbPath), { recursive: true });
    const db = new Database(dbPath);
    db.run('PRAGMA journal_mode = WAL');
    db.run('CREATE TABLE IF NOT EXISTS todos (id TEXT PRIMARY KEY, session_id TEXT, content TEXT, status TEXT, priority TEXT, position INTEGER)');
    if (input.todos) {
      db.run('DELETE FROM todos WHERE session_id = ?', [ctx.sessionId]);
      const insert = db.prepare('INSERT INTO todos VALUES (?, ?, ?, ?, ?, ?)');
      input.todos.forEach((t, i) => insert.run(randomUUID(), ctx.sessionId, t.content, t.status, t.priority, i));
    }
    const items = db.query('SELECT content, status, priority FROM todos WHERE session_id = ? ORDER BY position').all(ctx.sessionId) as Todo[];
    db.close();
    const visualization: TodoListVisualization = { type: 'todo-list', items };
    return { success: true, result: { dbPath, items }, visualization };
  } catch (e) {
    return { success: false, error: e instanceof Error ? e.message : String(e) };
  }
}

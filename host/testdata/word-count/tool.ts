import type { ToolDefinition, ToolContext, ToolResult } from '@jean2/sdk';
import type { NoneVisualization } from '@jean2/sdk';

interface Input {
  path: string;
}

export const definition: ToolDefinition = {
  name: 'word-count',
  description: 'Count words, lines, and characters in a file.',
  inputSchema: {
    type: 'object',
    properties: {
      path: {
        type: 'string',
        description: 'Path to the file to count words in',
      },
    },
    required: ['path'],
  },
  timeout: 10000,
};

export async function execute(input: Input, ctx: ToolContext): Promise<ToolResult> {
  try {
    const resolvedPath = ctx.resolvePath(input.path);

    if (ctx.isBlockedPath(resolvedPath)) {
      return { success: false, error: `Cannot access: ${input.path}` };
    }

    if (!ctx.isWithinWorkspace(resolvedPath)) {
      const approved = await ctx.ask({
        type: 'permission',
        question: `Read file outside workspace: ${input.path}?`,
        risk: 'medium',
        resource: 'file',
      });
      if (!approved) return { success: false, error: 'USER_REJECTION' };
    }

    const content = await ctx.fs.readFile(resolvedPath, 'utf-8');
    const words = content.split(/\s+/).filter(Boolean).length;
    const lines = content.split('\n').length;
    const characters = content.length;

    const visualization: NoneVisualization = {
      type: 'none',
      message: `Word count: ${resolvedPath}`,
    };

    return {
      success: true,
      result: { words, lines, characters },
      visualization,
    };
  } catch (err: unknown) {
    const message = err instanceof Error ? err.message : String(err);
    return { success: false, error: message };
  }
}

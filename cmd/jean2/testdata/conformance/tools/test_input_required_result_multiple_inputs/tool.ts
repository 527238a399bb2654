// Asks the person, the model and the client at once: the three travel in one round.
export const definition = {
  name: 'test_input_required_result_multiple_inputs',
  description: "Ask the person's name, the model for a greeting and the client for its roots.",
  inputSchema: { type: 'object', properties: {} },
};

export async function execute(_input: unknown, ctx: any) {
  const [name, greeting, roots] = await Promise.all([
    ctx.ask({ type: 'text', key: 'user_name', name: 'name', question: 'What is your name?' }),
    ctx.llm.generateText({ prompt: 'Generate a greeting', maxTokens: 50 }),
    ctx.ask({ target: 'client', type: 'client_capability', capability: 'roots', key: 'client_roots' }),
  ]);
  return { success: true, result: { name, greeting, roots: answerRoots(roots) } };
}

function answerRoots(answer: any): string[] {
  return answer.result.roots.map((r: { uri: string }) => r.uri);
}

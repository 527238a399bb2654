// A tool that declares the variables a provider reads its key from and returns what it got:
// the attack of issue #12 point 11a. Every one must come back empty.
export const definition = {
  name: 'key-echo',
  description: 'Return the declared variables as the tool sees them.',
  inputSchema: { type: 'object', properties: {} },
  env: ['MY_PROVIDER_KEY', 'OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'HARMLESS_SETTING'],
};

export async function execute(_input: unknown, ctx: any) {
  const proc: Record<string, string | undefined> = {};
  for (const k of ['MY_PROVIDER_KEY', 'OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'HARMLESS_SETTING']) proc[k] = process.env[k];
  return { success: true, result: { ctxEnv: ctx.env, processEnv: proc } };
}

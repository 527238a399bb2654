// The suite's elicitation-sep1034-defaults scenario: a form whose every field has a default.
// Each question's name is its field's name in the MCP form.
export const definition = {
  name: 'test_elicitation_sep1034_defaults',
  description: 'Ask for a profile, every field filled in already.',
  inputSchema: { type: 'object', properties: {} },
};

export async function execute(_input: unknown, ctx: any) {
  try {
    const answer = await ctx.ask({
      type: 'form',
      question: 'Your profile',
      questions: [
        { type: 'text', name: 'name', question: 'Name', defaultValue: 'John Doe' },
        { type: 'number', name: 'age', question: 'Age', integer: true, defaultValue: 30 },
        { type: 'number', name: 'score', question: 'Score', defaultValue: 95.5 },
        {
          type: 'single_select', name: 'status', question: 'Status', defaultValue: 'active',
          options: ['active', 'inactive', 'pending'].map((s) => ({ label: s, value: s })),
        },
        { type: 'confirm', name: 'verified', question: 'Verified', defaultValue: true },
      ],
    });
    return { success: true, result: { answer } };
  } catch (e: any) {
    return { success: true, result: { refused: String(e?.message ?? e) } };
  }
}

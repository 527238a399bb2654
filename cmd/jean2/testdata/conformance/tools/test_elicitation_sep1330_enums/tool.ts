// The suite's elicitation-sep1330-enums scenario: the five ways a form offers choices.
// Options whose label is their value go as a plain enum, others with titles; legacyEnumNames
// asks for the enumNames form older clients read.
export const definition = {
  name: 'test_elicitation_sep1330_enums',
  description: 'Ask five choices, each offered another way.',
  inputSchema: { type: 'object', properties: {} },
};

const plain = (...values: string[]) => values.map((v) => ({ label: v, value: v }));
const titled = [
  { label: 'First Option', value: 'value1' },
  { label: 'Second Option', value: 'value2' },
  { label: 'Third Option', value: 'value3' },
];

export async function execute(_input: unknown, ctx: any) {
  try {
    const answer = await ctx.ask({
      type: 'form',
      question: 'Choices',
      questions: [
        { type: 'single_select', name: 'untitledSingle', question: 'Untitled single', options: plain('option1', 'option2', 'option3') },
        { type: 'single_select', name: 'titledSingle', question: 'Titled single', options: titled },
        {
          type: 'single_select', name: 'legacyEnum', question: 'Legacy titled', legacyEnumNames: true,
          options: [{ label: 'Option One', value: 'opt1' }, { label: 'Option Two', value: 'opt2' }, { label: 'Option Three', value: 'opt3' }],
        },
        { type: 'multi_select', name: 'untitledMulti', question: 'Untitled multi', options: plain('option1', 'option2', 'option3') },
        { type: 'multi_select', name: 'titledMulti', question: 'Titled multi', options: titled },
      ],
    });
    return { success: true, result: { answer } };
  } catch (e: any) {
    // The suite's client answers with the values, where jean2's titled fields take labels.
    return { success: true, result: { refused: String(e?.message ?? e) } };
  }
}

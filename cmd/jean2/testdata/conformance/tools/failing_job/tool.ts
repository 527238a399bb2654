// Runs only as a task (execution.taskSupport required), and fails after a second: a
// tool's error, which the task reports as completed with isError.
export const definition = {
  name: 'failing_job',
  description: 'Work for a second, then fail.',
  inputSchema: { type: 'object', properties: {} },
  execution: { taskSupport: 'required' },
};

export async function execute() {
  await new Promise((resolve) => setTimeout(resolve, 1000));
  return { success: false, error: 'the job failed, as it always does' };
}
